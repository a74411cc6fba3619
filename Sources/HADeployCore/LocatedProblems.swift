/// An error made of problems at places in files (devices.yaml, templates): CI annotations point at
/// each place instead of one summary.
public protocol LocatedProblems: Error {
    /// Each problem with where it is, one message per place.
    var locatedProblems: [(location: SourceLocation, message: String)] { get }
}
