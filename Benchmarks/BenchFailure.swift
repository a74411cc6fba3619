/// A benchmark that could not run or whose run did not do what it measures: the figures would be
/// meaningless, so the command exits non-zero with what went wrong.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
