//! ge_model! (see the macro issue).
