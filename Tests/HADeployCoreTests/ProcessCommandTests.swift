import Foundation
import HADeployCore
import TestSupport
import Testing

@Suite struct ProcessCommandTests {
    let token = "s3cr3t-t0ken"

    var command: ProcessCommand {
        ProcessCommand(
            "xcrun", ["devicectl", "launch", "-HAAccessToken", token, "--header=Bearer \(token)", "it's"],
            environment: ["HA_TOKEN": token, "LC_ALL": "C"], workingDirectory: "/tmp",
            secretValues: [token])
    }

    /// A key's path that names its key ID: the plan printed `AuthKey_***.p8` in one process and `***` in
    /// another (a set's order), and a plan file that builds was then refused as "not this checkout's".
    @Test func aSecretThatHoldsAnotherIsHiddenWholeInEveryProcess() {
        let keyID = "ABC123XYZ"
        let keyPath = "/keys/AuthKey_\(keyID).p8"
        for secrets in [[keyID, keyPath], [keyPath, keyID]] {
            let command = ProcessCommand(
                "xcodebuild", ["-authenticationKeyPath", keyPath, "-authenticationKeyID", keyID],
                secretValues: Set(secrets))
            #expect(
                command.redactedArguments == ["-authenticationKeyPath", "***", "-authenticationKeyID", "***"])
        }
        #expect(
            Secret.scrub("at \(keyPath): bad key \(keyID)", of: [keyID, keyPath]) == "at ***: bad key ***")
    }

    @Test func secretsAreRedactedEverywhereButTheArguments() throws {
        #expect(command.arguments.contains(token))
        #expect(
            command.redactedArguments == [
                "devicectl", "launch", "-HAAccessToken", "***", "--header=Bearer ***", "it's",
            ])
        #expect(command.redactedEnvironment == ["HA_TOKEN": "***", "LC_ALL": "C"])
        #expect(
            command.description
                == #"xcrun devicectl launch -HAAccessToken '***' '--header=Bearer ***' 'it'\''s'"#)
        let json = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        #expect(!json.contains(token))
        #expect(json.contains("***"))
    }

    @Test func failureMessagesRedactTheCommandAndItsOutput() {
        let output = ProcessOutput(
            status: 3, standardOutput: Data(), standardError: Data("bad token \(token)\n".utf8))
        let message = ProcessError.nonZeroExit(command: command, output: output).description
        #expect(!message.contains(token))
        #expect(message.contains("exited with status 3"))
        #expect(message.contains("bad token ***"))
    }

    @Test func quotingKeepsPlainWordsBare() {
        let plain = ProcessCommand("git", ["-C", "/tmp/x", "describe", "--match", "v*", ""])
        #expect(plain.description == "git -C /tmp/x describe --match 'v*' ''")
    }

    @Test func aShellLineRunsTheSameArgumentsThroughARealShell() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hd shell \(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments = [
            "-c", "printf '%s|' \"$@\"; printf '%s' \"$MARK\"; pwd", "sh", "it's", "$HOME", "a b", "",
        ]
        let command = ProcessCommand(
            "sh", arguments, environment: ["MARK": "x;y `z`"], workingDirectory: directory.path)
        let output = try await TestHost.runner.checked(
            ProcessCommand("/bin/sh", ["-c", command.shellLine]), timeout: .seconds(10))
        #expect(output.stdout == "it's|$HOME|a b||x;y `z`\(directory.path)\n")
    }

    @Test func durationsAreFormattedForMessages() {
        #expect(Duration.seconds(90).formattedSeconds == "90 s")
        #expect(Duration.milliseconds(1500).formattedSeconds == "1.5 s")
        #expect(Duration.milliseconds(250).seconds == 0.25)
    }
}
