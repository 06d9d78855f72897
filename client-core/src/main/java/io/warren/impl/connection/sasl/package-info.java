/**
 * The SASL mechanisms of connection.start-ok (PLAIN, AMQPLAIN, EXTERNAL), chosen by the public
 * {@code AuthMechanism}. Part of the connection room.
 */
package io.warren.impl.connection.sasl;
