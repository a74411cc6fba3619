import Foundation
import HADeployCore
import Versioning

extension DeployPlan {
    /// Reads a plan file, refusing one of another format or (when `project` is given: the checkout is
    /// here) one made for another version of the project.
    public static func load(_ data: Data, path: String, project: String?) throws -> DeployPlan {
        struct Header: Decodable { var format: Int? }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: data)
        } catch {
            throw PlanFileError(path: path, problem: "not a hadeploy plan (JSON): \(error)")
        }
        guard header.format == currentFormat else {
            throw PlanFileError(
                path: path,
                problem:
                    "plan format \(header.format.map(String.init) ?? "(none)") — this hadeploy reads format "
                    + "\(currentFormat): make the plan again with this hadeploy (hadeploy plan … --json > plan.json)"
            )
        }
        let plan: DeployPlan
        do {
            plan = try JSONDecoder().decode(DeployPlan.self, from: data)
        } catch let error as DecodingError {
            throw PlanFileError(path: path, problem: "not a complete plan: \(PlanFileError.describe(error))")
        }
        if let project, project != plan.project {
            throw PlanFileError(
                path: path,
                problem: "made for another version of this project (devices.yaml, the .env keys set or the "
                    + "version \(plan.version) differ from the checkout here): make the plan again")
        }
        return plan
    }
}

/// A plan file hadeploy will not run, and why.
public struct PlanFileError: Error, CustomStringConvertible, ExitStatusProviding {
    public var path: String
    public var problem: String
    public var description: String { "\(path): \(problem)" }
    public var exitStatus: ExitStatus { .config }

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    static func describe(_ error: DecodingError) -> String {
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
                .joined()
            return (path.isEmpty ? "" : "at \(path): ") + context.debugDescription
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(at(context)) (no \(key.stringValue))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return at(context)
        @unknown default: return "\(error)"
        }
    }
}
