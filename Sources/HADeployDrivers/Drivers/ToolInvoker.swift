import Foundation
import HADeployCore

/// Runs one external tool's commands for one device through the injected runner, always with a
/// deadline, and turns every failure into an `AppleDriverError` with secrets redacted.
struct ToolInvoker: Sendable {
    var runner: any ProcessRunner
    /// How people call the tool: `xcrun simctl`, `pymobiledevice3`.
    var tool: String
    /// The device or simulator, for messages.
    var device: String
    /// What to do when the tool is not installed.
    var installHint: String
    var secrets: Set<String> = []

    /// Runs `command`; a missing executable, a launch failure or a timeout throws, a non-zero exit does not.
    func run(
        _ command: ProcessCommand, step: String, timeout: Duration,
        missing: (reason: String, fix: String)? = nil
    ) async throws -> ProcessOutput {
        var command = command
        command.secretValues.formUnion(secrets)
        do {
            return try await runner.run(command, timeout: timeout)
        } catch let error as ProcessError {
            switch error {
            case .notFound:
                throw AppleDriverError(
                    .toolMissing, step: step, device: device,
                    reason: missing?.reason
                        ?? "\(tool) is not installed (`\(command.executable)` was not found)",
                    fix: missing?.fix ?? installHint)
            case .timedOut(_, let after):
                throw AppleDriverError(
                    .failed, step: step, device: device,
                    reason: "`\(command)` did not finish within \(after.formattedSeconds) and was stopped",
                    fix: "raise `timeouts.\(step)` in devices.yaml if the device is slow")
            case .launchFailed, .nonZeroExit:
                throw AppleDriverError(.failed, step: step, device: device, reason: redact("\(error)"))
            }
        }
    }

    /// Runs `command` and throws unless it exits 0, quoting the tool's own (redacted) message.
    func checked(
        _ command: ProcessCommand, step: String, timeout: Duration,
        missing: (reason: String, fix: String)? = nil, fix: String? = nil
    ) async throws -> ProcessOutput {
        let output = try await run(command, step: step, timeout: timeout, missing: missing)
        guard output.status == 0 else {
            throw failure(command, output: output, step: step, fix: fix)
        }
        return output
    }

    /// The error for a command that exited non-zero.
    func failure(
        _ command: ProcessCommand, output: ProcessOutput, step: String, fix: String? = nil
    ) -> AppleDriverError {
        let message = Self.lastLines(output.stderr.isEmpty ? output.stdout : output.stderr)
        // xcrun exits 72 when the selected Xcode lacks the tool (no Xcode, or command line tools only).
        if command.executable.hasSuffix("xcrun"),
            output.status == 72 || message.contains("unable to find utility")
        {
            return AppleDriverError(
                .toolMissing, step: step, device: device,
                reason:
                    "xcrun cannot find \(tool.replacingOccurrences(of: "xcrun ", with: "")): \(redact(message))",
                fix: "install Xcode, or point the flavour's `xcode:` (DEVELOPER_DIR) at one")
        }
        var command = command
        command.secretValues.formUnion(secrets)
        return AppleDriverError(
            .failed, step: step, device: device,
            reason: "`\(command)` exited with status \(output.status)"
                + (message.isEmpty ? "" : ": \(redact(message))"),
            fix: fix)
    }

    func redact(_ text: String) -> String {
        Secret.scrub(text, of: secrets)
    }

    /// The end of a tool's output: where its error is, without pages of progress lines.
    static func lastLines(_ text: String, count: Int = 4) -> String {
        let lines = text.split(whereSeparator: \.isNewline).map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        return lines.suffix(count).joined(separator: " | ")
    }
}
