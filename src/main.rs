mod cgroup;
mod scenario;
mod units;
fn main() {}
