//! perfkit
