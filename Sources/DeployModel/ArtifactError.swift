import HADeployCore

/// Why an artifact cannot be used.
public struct ArtifactError: Error, CustomStringConvertible, ExitStatusProviding {
    public var path: String
    public var problem: String

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "\(path): \(problem)" }
    public var exitStatus: ExitStatus { .buildFailed }
}
