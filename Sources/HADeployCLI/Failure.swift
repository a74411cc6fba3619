import ArgumentParser
import Foundation
import HADeployCore

/// Prints an error the way the user (or CI) reads it, and turns it into the promised exit code.
enum Failure {
    static func report(_ error: any Error, context: HADeployContext) -> any Error {
        if error is ExitCode || error is CleanExit { return error }
        // A ValidationError found while running (an unknown flavour, a device not on SSH) is still
        // a usage error, as it is when ArgumentParser finds it.
        let status =
            (error as? any ExitStatusProviding)?.exitStatus ?? (error is ValidationError ? .usage : .failure)
        let message = "\(error)"
        context.message("error: \(message)")
        if context.environment["GITHUB_ACTIONS"] == "true" {
            // GitHub annotations: one line, newlines encoded as %0A.
            let encoded = message.replacingOccurrences(of: "%", with: "%25")
                .replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
            context.message("::error title=hadeploy::\(encoded)")
        }
        return ExitCode(status.rawValue)
    }
}

extension AsyncParsableCommand {
    /// Runs `body` with the live context, mapping thrown errors to messages and exit codes.
    func withContext(_ body: (HADeployContext) async throws -> Void) async throws {
        let context = HADeployContext.live()
        do {
            try await body(context)
        } catch {
            throw Failure.report(error, context: context)
        }
    }
}
