//! The strata commnode role: accepts its children in the tree network, forwards commands
//! down, and merges their trees (with `strata_filters::merge`) on the way up.
//!
//! Not built yet: the tree network arrives with issue 5. The merge it will run is
//! `strata_filters::ConcatMerge`, which exists and is tested.
