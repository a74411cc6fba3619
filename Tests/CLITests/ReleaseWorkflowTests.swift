import Foundation
import HADeployCLI
import TestSupport
import Testing
import Yams

/// The GitHub Actions template shipped for the app's repository is valid YAML, and every `hadeploy`
/// command in it parses against the real command line (a renamed flag would break users' CI).
struct ReleaseWorkflowTests {
    static let template = HADeployBinary.repositoryRoot.appendingPathComponent("Templates/ci/release.yml")

    func jobs() throws -> [String: [[String: Any]]] {
        let text = try String(contentsOf: Self.template, encoding: .utf8)
        let workflow = try #require(try Yams.load(yaml: text) as? [String: Any])
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        var result: [String: [[String: Any]]] = [:]
        for (name, job) in jobs {
            result[name] = ((job as? [String: Any])?["steps"] as? [Any] ?? []).compactMap {
                $0 as? [String: Any]
            }
        }
        return result
    }

    func commands() throws -> [[String]] {
        var found: [[String]] = []
        for steps in try jobs().values {
            for step in steps {
                guard let run = step["run"] as? String else { continue }
                for line in run.split(separator: "\n") {
                    // A `${{ expression }}` is one word by the time the shell sees it.
                    let expanded = line.replacingOccurrences(
                        of: #"\$\{\{[^}]*\}\}"#, with: "EXPR", options: .regularExpression)
                    let words = expanded.split(separator: " ").map(String.init)
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

    @Test func everyJobThatRunsHadeployInstallsItFirst() throws {
        for (name, steps) in try jobs() {
            let runs = steps.map { $0["run"] as? String ?? "" }
            guard
                let first = runs.firstIndex(where: { $0.hasPrefix("hadeploy ") || $0.contains("\nhadeploy ") }
                )
            else { continue }
            let install = runs.firstIndex { $0.contains("make -C") && $0.contains("GITHUB_PATH") }
            #expect(install.map { $0 < first } == true, "job \(name) runs hadeploy before installing it")
        }
    }

    @Test func secretsReachScriptsOnlyThroughTheEnvironment() throws {
        // `${{ secrets.X }}` inside `run:` is pasted into the script text (and into its error output).
        for (name, steps) in try jobs() {
            for step in steps {
                let run = step["run"] as? String ?? ""
                #expect(!run.contains("secrets."), "job \(name) pastes a secret into a script: \(run)")
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
