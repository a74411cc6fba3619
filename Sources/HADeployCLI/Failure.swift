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
        // Foundation's own errors ("Error Domain=NSCocoaErrorDomain Code=513 …") in words.
        let message = SystemErrorText.message(error)
        context.message("error: \(message)")
        if context.environment["GITHUB_ACTIONS"] == "true" {
            // hadeploy's own workflow commands: the only lines that may start with `::`.
            for line in GitHubAnnotation.lines(for: error, message: message) {
                context.output.writeControl(line + "\n", to: .standardError)
            }
        }
        return ExitCode(status.rawValue)
    }
}

/// A command whose every side effect goes through the context it is given (`run(_:)`); only the
/// plain `run()` ArgumentParser calls builds the live one.
protocol ContextCommand: AsyncParsableCommand {
    func run(_ context: HADeployContext) async throws
}

extension ContextCommand {
    func run() async throws {
        try await run(reportingTo: .live())
    }

    /// Runs with `context`, printing a thrown error to its stderr the way the user reads it and
    /// turning it into the promised exit code.
    func run(reportingTo context: HADeployContext) async throws {
        do {
            try await run(context)
        } catch {
            throw Failure.report(error, context: context)
        }
    }
}

/// GitHub Actions workflow commands for an error: one `::error` per located problem (shown on the
/// file's line in the run and the pull request), else one for the whole message.
enum GitHubAnnotation {
    static func lines(for error: any Error, message: String) -> [String] {
        if let located = (error as? any LocatedProblems)?.locatedProblems, !located.isEmpty {
            return located.map { location, text in
                var properties = ["file=\(property(location.file))", "line=\(location.line)"]
                if let column = location.column { properties.append("col=\(column)") }
                properties.append("title=hadeploy")
                return "::error \(properties.joined(separator: ","))::\(data(text))"
            }
        }
        return ["::error title=hadeploy::\(data(message))"]
    }

    /// The message part: control characters made visible, then `%`, CR and LF escaped (one line per
    /// command).
    static func data(_ text: String) -> String {
        PrintableText.neutralised(text).replacingOccurrences(of: "%", with: "%25").replacingOccurrences(
            of: "\r", with: "%0D"
        )
        .replacingOccurrences(of: "\n", with: "%0A")
    }

    /// A property value: also `:` and `,`, which end it.
    static func property(_ text: String) -> String {
        data(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }
}
