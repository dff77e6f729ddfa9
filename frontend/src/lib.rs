pub fn main_placeholder() {}
