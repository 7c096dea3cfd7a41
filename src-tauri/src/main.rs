fn main() {
    switchyard_desktop::run();
}
