import Foundation
import HADeployCore
import TestSupport
import Testing

/// The Python reference implementations the tests compare against (python-dotenv, PyYAML, plistlib),
/// from `.venv-tools/`, which `scripts/tools-venv.sh` creates (idempotent; pinned versions).
enum ReferenceTools {
    static let repositoryRoot = TestSupport.repositoryRoot
    static let python = repositoryRoot.appendingPathComponent(".venv-tools/bin/python").path

    /// Created once per test process; a missing venv must fail the tests, not skip them.
    private static let setup = Task<Void, any Error> {
        _ = try await TestHost.runner.checked(
            ProcessCommand(repositoryRoot.appendingPathComponent("scripts/tools-venv.sh").path),
            timeout: .seconds(600))
    }

    /// Runs the venv's python with exactly `environment` (plus PATH), like `env -i`.
    static func python(_ arguments: [String], environment: [String: String] = [:]) async throws
        -> ProcessOutput
    {
        try await setup.value
        var variables = environment
        variables["PATH"] = variables["PATH"] ?? "/usr/bin:/bin"
        let assignments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try await TestHost.runner.checked(
            ProcessCommand("/usr/bin/env", ["-i"] + assignments + [python] + arguments),
            timeout: .seconds(120))
    }

    /// Runs a Python program given as text.
    static func pythonScript(_ source: String, arguments: [String] = []) async throws -> ProcessOutput {
        try await python(["-c", source] + arguments)
    }
}
