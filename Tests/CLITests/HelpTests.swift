import ArgumentParser
import Foundation
import HADeployCLI
import TestSupport
import Testing

@Suite struct HelpTests {
    @Test(arguments: [
        (
            [],
            [
                "hadeploy all --kiosk", "hadeploy sim iphone",
                "hadeploy mini4 ipad2 --dashboard wall-kitchen",
                "hadeploy plan all --json", "git tag v1.2.3",
            ]
        ),
        (
            ["deploy"],
            [
                "hadeploy all --kiosk", "hadeploy ipad2 --no-build", "--dry-run", "--no-kiosk", "--default",
                "--config", "--env-file",
            ]
        ),
        (
            ["plan"],
            [
                "hadeploy plan all", "hadeploy plan mini4 ipad2 --dashboard wall-kitchen --json",
                "<unset: KEY>", "***",
            ]
        ),
        (
            ["status"],
            [
                "hadeploy status all --virtual", "hadeploy status mini4 ipad2 --json", "--report",
                "Exit codes: 0", "3 some", "--timeout", "hadeploy status all --publish", "--every",
            ]
        ),
        (
            ["version"],
            [
                "hadeploy version", "1.10.0 (57)", "hadeploy version --json", "git tag v1.11.0",
                "--allow-shallow",
            ]
        ),
        (
            ["render"],
            ["hadeploy render --check", "hadeploy render --env-file ci.env --out .", "--templates"]
        ),
    ])
    func helpShowsRealExamples(command: [String], mustContain: [String]) async throws {
        let project = try await Project(commits: 1)
        let result = try await HADeployBinary.run(command + ["--help"], in: project.url)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Examples"))
        for text in mustContain {
            #expect(result.stdout.contains(text), "\(command) --help lacks \(text)")
        }
    }

    /// On an 80-column terminal every line of each command's examples and notes prints as written:
    /// ArgumentParser wraps longer lines, which breaks an example in the middle of a command.
    @Test func noHelpLineIsWrappedOnAnEightyColumnTerminal() throws {
        let commands: [any ParsableCommand.Type] = [HADeploy.self] + HADeploy.configuration.subcommands
        #expect(commands.count >= 11)
        for command in commands {
            let help = HADeploy.helpMessage(for: command, columns: 80)
            let printed = Set(help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
            let name = command.configuration.commandName ?? "hadeploy"
            for line in command.configuration.discussion.split(separator: "\n") where !line.isEmpty {
                #expect(printed.contains(String(line)), "\(name) --help wraps: \(line)")
            }
        }
    }
}
