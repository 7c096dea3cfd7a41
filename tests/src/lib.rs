//! Black-box scenario tests live in tests/*.rs.
