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
        #expect(all.count >= 5, "the template should run version, render, build, render and deploy")
        for argv in all {
            #expect(throws: Never.self, "hadeploy \(argv.joined(separator: " "))") {
                _ = try HADeploy.parseAsRoot(argv)
            }
        }
    }

    func workflow() throws -> [String: Any] {
        let text = try String(contentsOf: Self.template, encoding: .utf8)
        return try #require(try Yams.load(yaml: text) as? [String: Any])
    }

    func job(_ name: String) throws -> [String: Any] {
        try #require((try workflow()["jobs"] as? [String: Any])?[name] as? [String: Any], "job \(name)")
    }

    /// Installed before use: the release archive on Linux, a release build of the pinned tag on macOS
    /// (Linux archives do not run there) — never restored from a cache, which any workflow run on the
    /// default branch can write, in jobs that hold the App Store Connect key or the signing certificate.
    @Test func everyJobThatRunsHadeployInstallsItFirst() throws {
        for (name, steps) in try jobs() {
            let runs = steps.map { $0["run"] as? String ?? "" }
            guard
                let first = runs.firstIndex(where: { $0.hasPrefix("hadeploy ") || $0.contains("\nhadeploy ") }
                )
            else { continue }
            let install = runs.firstIndex { $0.contains("GITHUB_PATH") }
            #expect(install.map { $0 < first } == true, "job \(name) runs hadeploy before installing it")
            let script = install.map { runs[$0] } ?? ""
            let runner = "\(try job(name)["runs-on"] ?? "")"
            if runner.contains("macos") || runner.contains("matrix.runner") {
                #expect(script.contains("install PREFIX="), "job \(name): a release build (make install)")
                #expect(script.contains("--branch \"v$HADEPLOY_VERSION\""), "job \(name): the pinned tag")
                let cached = steps.contains { ($0["uses"] as? String)?.hasPrefix("actions/cache") == true }
                #expect(!cached, "job \(name) runs hadeploy from a cache (cache poisoning)")
            } else {
                #expect(script.contains("linux-x86_64.tar.gz") && script.contains("tar -xz"), "job \(name)")
            }
            #expect(
                !script.contains(" build\n") && !script.contains("swift build"),
                "job \(name) builds from source")
        }
    }

    /// Like the app's own build.yml: pull requests and main build; a tag or a manual version releases.
    @Test func pullRequestsBuildAndATagOrAManualVersionReleases() throws {
        let on = try #require(try workflow()["on"] as? [String: Any])
        #expect(on.keys.contains("pull_request"))
        #expect(((on["push"] as? [String: Any])?["tags"] as? [String]) == ["v*"])
        let inputs = (on["workflow_dispatch"] as? [String: Any])?["inputs"] as? [String: Any]
        #expect(inputs?["release_version"] != nil)

        let release = try job("release")
        let condition = try #require(release["if"] as? String)
        #expect(condition.contains("refs/tags/v") && condition.contains("inputs.release_version"))
        #expect(try job("build")["if"] == nil, "every event builds")
        // The manual version reaches hadeploy as a local tag in every job that versions the app.
        for name in ["version", "build", "release"] {
            let steps = try #require(try jobs()[name])
            #expect(steps.contains { ($0["run"] as? String) == "git tag \"v$RELEASE_VERSION\"" }, "\(name)")
        }
    }

    @Test func theReleaseArchivesExportsBothWaysAndPublishes() throws {
        let steps = try #require(try jobs()["release"])
        let script = steps.compactMap { $0["run"] as? String }.joined(separator: "\n")
        #expect(script.contains("xcodebuild archive"))
        #expect(script.contains("-configuration Release"), "the project's own configuration")
        #expect(script.components(separatedBy: "xcodebuild -exportArchive").count - 1 == 1)
        #expect(
            script.contains("method -string app-store-connect")
                && script.contains("destination -string upload"))
        #expect(script.contains("-authenticationKeyPath \"$ASC_KEY_PATH\""))
        // The app's two products: the App Store archive arm64 only and iOS 15+ (ITMS-90068 refused
        // build 162 for iOS 9.0), and the universal IPA, armv7 + arm64 for iOS 9.0, on the release.
        #expect(script.contains("[ \"$archs\" = arm64 ]") && script.contains("-ge 15"))
        #expect(script.contains("HADashboard-$MARKETING_VERSION-universal-armv7-arm64.ipa"))
        #expect(script.contains("*\" armv7 \"*\" arm64 \"*") && script.contains("[ \"$minimum\" = 9.0 ]"))
        #expect(script.contains("gh release create") && !script.contains("release/*.ipa"))
        let env = try #require(try workflow()["env"] as? [String: Any])
        #expect(
            env["APP_STORE_BUILD_NUMBER_FLOOR"] as? String == "162",
            "the app's floor, checked by `hadeploy version`")
        #expect(script.contains("MARKETING_VERSION=\"$MARKETING_VERSION\""))
    }

    /// The signing certificate lives in a keychain made for the run and removed even on failure.
    @Test func theSigningKeychainIsTemporaryAndRemoved() throws {
        let steps = try #require(try jobs()["release"])
        let create = try #require(
            steps.firstIndex { ($0["run"] as? String)?.contains("security create-keychain") == true })
        let remove = try #require(
            steps.firstIndex { ($0["run"] as? String)?.contains("security delete-keychain") == true })
        #expect(create < remove && remove == steps.count - 1)
        #expect(steps[remove]["if"] as? String == "always()")
        // In the runner's temporary folder, set by a step before it is made (a job's env cannot use
        // the runner context: GitHub refuses the workflow, actionlint says so).
        let path = try #require(
            steps.firstIndex {
                ($0["run"] as? String)?.contains(
                    "echo \"KEYCHAIN_PATH=$RUNNER_TEMP/signing.keychain-db\" >> \"$GITHUB_ENV\"") == true
            })
        #expect(path < create)
        let createScript = steps[create]["run"] as? String ?? ""
        #expect(createScript.contains("openssl rand"), "a fresh password, not a secret pasted in")
        #expect(createScript.contains("rm -f \"$RUNNER_TEMP/signing.p12\""))
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

    /// What the security linter zizmor (`make lint-workflows`) checks, stated for this template: every
    /// action pinned to a full commit (the comment names its tag), no token permissions by default and
    /// a block per job, no checkout leaving the token in .git/config.
    @Test func actionsArePinnedAndTokensHeldToWhatEachJobNeeds() throws {
        let text = try String(contentsOf: Self.template, encoding: .utf8)
        let uses = text.split(separator: "\n").filter { $0.contains("uses: ") }
        #expect(uses.count >= 8)
        for line in uses {
            #expect(
                line.wholeMatch(of: #/\s*(- )?uses: [\w-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+/#) != nil,
                "not pinned to a commit: \(line)")
        }
        #expect(try workflow()["permissions"] as? [String: Any] != nil, "no default token permissions")
        #expect((try workflow()["permissions"] as? [String: Any])?.isEmpty == true)
        for (name, steps) in try jobs() {
            let permissions = try #require(try job(name)["permissions"] as? [String: String], "job \(name)")
            #expect(permissions == ["contents": name == "release" ? "write" : "read"], "job \(name)")
            for step in steps where (step["uses"] as? String)?.hasPrefix("actions/checkout@") == true {
                #expect(
                    (step["with"] as? [String: Any])?["persist-credentials"] as? Bool == false, "job \(name)")
            }
        }
    }
}
