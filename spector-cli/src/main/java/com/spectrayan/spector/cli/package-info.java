/** The {@code bin/spector} command line: one picocli command per process or tool. */
@NullMarked
package com.spectrayan.spector.cli;

import org.jspecify.annotations.NullMarked;
