//! ge-build
