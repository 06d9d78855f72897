/**
 * What the stream adapters ({@code io.warren.flow}, {@code io.warren.vertx}) share about a consumer's end. The one
 * part of {@code io.warren.impl} an adapter may use, and built like the adapters on the public API only
 * ({@code ArchitectureTest} holds both); not exported.
 */
package io.warren.impl.adapter;
