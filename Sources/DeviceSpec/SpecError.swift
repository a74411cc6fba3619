import HADeployCore

/// One problem found in devices.yaml.
public struct SpecProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String

    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): error: \(message)" }
}

/// Every problem in devices.yaml, reported together (exit 78).
public struct SpecValidationError: Error, CustomStringConvertible, ExitStatusProviding {
    public var problems: [SpecProblem]

    public init(problems: [SpecProblem]) { self.problems = problems }

    public var description: String {
        let sorted = problems.sorted {
            ($0.location.line, $0.location.column ?? 0) < ($1.location.line, $1.location.column ?? 0)
        }
        let file = sorted.first?.location.file ?? "devices.yaml"
        let count = sorted.count == 1 ? "1 problem" : "\(sorted.count) problems"
        return "\(file) is not valid (\(count)):\n" + sorted.map(\.description).joined(separator: "\n")
    }

    public var exitStatus: ExitStatus { .config }
}

extension SpecValidationError: LocatedProblems {
    public var locatedProblems: [(location: SourceLocation, message: String)] {
        problems.map { ($0.location, $0.message) }
    }
}
