//! Variables (seed 000).
