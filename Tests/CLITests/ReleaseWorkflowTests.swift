import Foundation
import HADeployCLI
import TestSupport
import Testing
import Yams

/// The GitHub Actions template shipped for the app's repository is valid YAML, and every `hadeploy`
/// command in it parses against the real command line (a renamed flag would break users' CI).
struct ReleaseWorkflowTests {
    static let template = HADeployBinary.repositoryRoot.appendingPathComponent("Templates/ci/release.yml")

    func commands() throws -> [[String]] {
        let text = try String(contentsOf: Self.template, encoding: .utf8)
        let workflow = try #require(try Yams.load(yaml: text) as? [String: Any])
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        var found: [[String]] = []
        for case let job as [String: Any] in jobs.values {
            for case let step as [String: Any] in job["steps"] as? [Any] ?? [] {
                guard let run = step["run"] as? String else { continue }
                for line in run.split(separator: "\n") {
                    let words = line.split(separator: " ").map(String.init)
                    guard let index = words.firstIndex(of: "hadeploy") else { continue }
                    // Stop at shell syntax: redirections and pipes are not hadeploy's.
                    let argv = words[(index + 1)...].prefix { !["&&", "|", ">", ">>", ";"].contains($0) }
                    found.append(Array(argv))
                }
            }
        }
        return found
    }

    @Test func everyHadeployCommandInTheWorkflowParses() throws {
        let all = try commands()
        #expect(all.count >= 4, "the template should run version, render, build and deploy")
        for argv in all {
            #expect(throws: Never.self, "hadeploy \(argv.joined(separator: " "))") {
                _ = try HADeploy.parseAsRoot(argv)
            }
        }
    }

    @Test func theWorkflowFetchesFullHistoryForTheBuildNumber() throws {
        let text = try String(contentsOf: Self.template, encoding: .utf8)
        let checkouts = text.components(separatedBy: "actions/checkout@").count - 1
        let fullHistory = text.components(separatedBy: "fetch-depth: 0").count - 1
        #expect(checkouts > 0 && checkouts == fullHistory)
    }
}
