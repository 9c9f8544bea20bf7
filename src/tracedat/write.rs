//! trace.dat writer (versions 6 and 7, uncompressed). OWNER: the `rec` work.
