pub mod cli;
pub mod evidence;
pub mod gate;
pub mod ledger_edit;
pub mod load;
pub mod probe;
pub mod render;
