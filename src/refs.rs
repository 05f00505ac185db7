//! `$VAR_REF` references (seed 000).
