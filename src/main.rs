fn main() {
    std::process::exit(specrun::run());
}
