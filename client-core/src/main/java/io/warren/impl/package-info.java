/**
 * Warren's implementation, the client room: the handles the application holds, which outlive recovery
 * ({@link io.warren.impl.ConnectionImpl}, {@link io.warren.impl.ChannelImpl}), and the
 * {@link io.warren.impl.Connector} that opens connections. Not exported.
 *
 * <p>The rooms below, each a package with one-way arrows (ArchitectureTest keeps them so):
 * {@code recovery -> publish, consume -> channel -> connection -> metrics, queue}. This room may use all of them;
 * a lower room calls up only through an interface it owns, implemented here.
 */
package io.warren.impl;
