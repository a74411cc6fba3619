import Foundation
import HADeployCore
import TestSupport
import Testing

/// Seeded mutations of devices.yaml, `.env` and the command line, run against the built binary:
/// whatever the input, hadeploy ends promptly with one of its promised exit codes, never a crash,
/// and a configuration error (78) says where (file:line, or the path or option at fault).
///
/// Fixed seeds and a fixed count, so a failure reproduces: the message names the seed, the command
/// and the mutated files are kept under the reported directory.
@Suite struct FuzzTests {
    static let runs = 300
    static let workers = 4
    static let allowed: Set<Int32> = [0, 1, 2, 64, 78]
    /// Plan-only commands: nothing here may touch a device or a network peer.
    static let commands: [[String]] = [
        ["plan", "all"], ["plan", "all", "--json"], ["all", "--dry-run"], ["deploy", "ipads", "--dry-run"],
        ["plan", "mini4", "ipad2"], ["version"], ["render", "--check"],
    ]

    /// SplitMix64: small, seedable, the same on every platform.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let hostileScalars = [
        "1e300", "1e16", "-1", "0", "nan", "inf", "-inf", "0x7fffffffffffffff", "99999999999999999999", "",
        "~", "null", "[", "{", "}", "]", "&anchor", "*alias", "!!binary AAAA", "'unterminated", "\"",
        "${", "${UNSET}", "${A:-${B:-${C}}}", "../../etc/passwd", "/dev/zero", "a\u{0}b", "\u{FEFF}x",
        "true", "yes", String(repeating: "x", count: 70_000), "-", "? complex", "|", ">", "%TAG",
        "http://user:pw@host:8123", "ssh://[::1", "💥", "\t", "1.5.9.9.9",
    ]

    static let envLines = [
        "HA_SERVER=http://user:secretpw@127.0.0.1:1", "HA_TOKEN=\"unterminated", "B0=0123456789abcdef",
        "B1=${B0}${B0}", "X=${X}${X}${X}", "'=1", "export", "export =", "=", "A==", "\u{0}=\u{0}",
        "K=" + String(repeating: "${K}", count: 500), "IPAD_MINI4_UDID=../../x", "IPAD2_HOST=;rm -rf /",
        "BUNDLE_ID=../DCIM", "HA_DASHBOARD=\u{1}", "A=\"\\", "#", "   ", "A='x'y'z'",
    ]

    static let options: [[String]] = [
        ["--jobs", "0"], ["--jobs", "-1"], ["--jobs", "99999999999999999999"], ["--jobs", "x"],
        ["--config", ""], ["--config", "/dev/zero"], ["--config", "."], ["--config", "missing.yaml"],
        ["--env-file", ""], ["--env-file", "/dev/zero"], ["--env-file", "."], ["--server", "http://u:p@h"],
        ["--server", "not a url"], ["--dashboard", ""], ["--dashboard", "../x"], ["--report", "/dev/null"],
        ["--bogus"], ["--kiosk", "--no-kiosk"], ["--default", "--dashboard", "x"], ["nosuchdevice"],
        ["--artifact", "/dev/zero"], ["--no-build", "--artifact", "."], ["-"], ["--"], ["\u{0}"],
    ]

    /// One mutation of `text`, line-wise.
    static func mutate(_ text: String, _ random: inout Generator, extra: [String]) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return text }
        let index = Int.random(in: 0..<lines.count, using: &random)
        switch Int.random(in: 0..<9, using: &random) {
        case 0: lines.remove(at: index)
        case 1: lines.insert(lines[index], at: index)
        case 2:
            let other = Int.random(in: 0..<lines.count, using: &random)
            lines.swapAt(index, other)
        case 3:
            // Replace the value after the first `:` or `=` with a hostile one.
            let line = lines[index]
            let value = hostileScalars.randomElement(using: &random)!
            if let colon = line.firstIndex(where: { $0 == ":" || $0 == "=" }) {
                lines[index] = String(line[...colon]) + " " + value
            } else {
                lines[index] = value
            }
        case 4: lines.insert(extra.randomElement(using: &random)!, at: index)
        case 5: lines = Array(lines.prefix(index))
        case 6: lines[index] = "  " + lines[index]
        case 7: lines[index] = String(lines[index].dropFirst(2))
        default:
            var bytes = Array(lines[index].utf8)
            bytes.insert(
                UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random)
            )
            lines[index] = String(decoding: bytes, as: UTF8.self)
        }
        return lines.joined(separator: "\n")
    }

    struct Case: Sendable {
        var seed: UInt64
        var yaml: Data?
        var env: Data?
        var arguments: [String]
        /// Which input was mutated, for the 78 check.
        var mutatedPaths: [String]
    }

    static func makeCase(seed: UInt64, yaml original: String, env original2: String) -> Case {
        var random = Generator(state: seed)
        var yaml: Data?
        var env: Data?
        var mutated: [String] = []
        var arguments = commands.randomElement(using: &random)!
        switch seed % 3 {
        case 0:
            var text = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                text = mutate(text, &random, extra: hostileScalars.map { "  \($0): \($0)" })
            }
            var bytes = Data(text.utf8)
            if Bool.random(using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(UInt8.random(in: 0x80...0xFF, using: &random), at: at)
            }
            yaml = bytes
            mutated.append("devices.yaml")
        case 1:
            var text = original2
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                text = mutate(text, &random, extra: envLines)
            }
            var bytes = Data(text.utf8)
            if Bool.random(using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(UInt8.random(in: 0x80...0xFF, using: &random), at: at)
            }
            env = bytes
            mutated.append(".env")
        default:
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let option = options.randomElement(using: &random)!
                arguments.insert(contentsOf: option, at: Int.random(in: 1...arguments.count, using: &random))
                mutated += option
            }
        }
        return Case(seed: seed, yaml: yaml, env: env, arguments: arguments, mutatedPaths: mutated)
    }

    /// Whether a configuration error says where: `file:line`, or names the path or option at fault.
    static func locates(_ stderr: String, _ mutated: [String]) -> Bool {
        if stderr.range(of: #"[^\s:]+:[0-9]+(:[0-9]+)?: error"#, options: .regularExpression) != nil {
            return true
        }
        if stderr.range(of: #"\(used at [^\s:]+:[0-9]+"#, options: .regularExpression) != nil { return true }
        return mutated.contains { !$0.isEmpty && !$0.hasPrefix("--") && stderr.contains($0) }
            || stderr.contains("--config is an empty path") || stderr.contains("--env-file is an empty path")
    }

    @Test func mutatedConfigurationAndCommandLinesNeverCrashOrHang() async throws {
        let yaml = try String(
            contentsOf: HADeployBinary.repositoryRoot.appendingPathComponent("devices.yaml"), encoding: .utf8)
        let env =
            "HA_SERVER=http://127.0.0.1:1\nHA_TOKEN=fuzz-token\nBUNDLE_ID=com.example.hadashboard\n"
            + "APPLE_TEAM_ID=ABCDE12345\nIPAD_MINI4_UDID=00008030-000000000000001E\n"
        var projects: [Project] = []
        for _ in 0..<Self.workers { projects.append(try await Project(commits: 1, tag: "v1.0.0")) }
        let cases = (0..<Self.runs).map { Self.makeCase(seed: UInt64($0) &+ 0xF022, yaml: yaml, env: env) }
        let started = ContinuousClock.now
        let outcomes = try await withThrowingTaskGroup(of: ([String], [Int32]).self) { group in
            for (worker, project) in projects.enumerated() {
                let mine = cases.enumerated().filter { $0.offset % Self.workers == worker }.map(\.element)
                group.addTask {
                    var problems: [String] = []
                    var statuses: [Int32] = []
                    for fuzz in mine {
                        try (fuzz.yaml ?? Data(yaml.utf8)).write(
                            to: project.url.appendingPathComponent("devices.yaml"))
                        try (fuzz.env ?? Data(env.utf8)).write(to: project.url.appendingPathComponent(".env"))
                        let label = "seed \(fuzz.seed) `hadeploy \(fuzz.arguments.joined(separator: " "))`"
                        let result: HADeployBinary.Result
                        do {
                            result = try await HADeployBinary.run(
                                fuzz.arguments, in: project.url,
                                environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:/nonexistent/usbmuxd"],
                                timeout: .seconds(30))
                        } catch {
                            problems.append("\(label): hung or could not run (\(error))")
                            continue
                        }
                        statuses.append(result.status)
                        if !Self.allowed.contains(result.status) {
                            problems.append("\(label): exit \(result.status)\n\(result.stderr.suffix(600))")
                        } else if result.status == 78, !Self.locates(result.stderr, fuzz.mutatedPaths) {
                            problems.append("\(label): exit 78 without a place\n\(result.stderr.prefix(600))")
                        }
                        if result.stderr.contains("Fatal error") || result.stderr.contains("Stack dump") {
                            problems.append("\(label): crashed\n\(result.stderr.suffix(600))")
                        }
                        if result.stdout.contains("secretpw") || result.stderr.contains("secretpw") {
                            problems.append("\(label): printed a URL password")
                        }
                    }
                    return (problems, statuses)
                }
            }
            var all: ([String], [Int32]) = ([], [])
            for try await (problems, statuses) in group {
                all.0 += problems
                all.1 += statuses
            }
            return all
        }
        let findings = outcomes.0
        var histogram: [Int32: Int] = [:]
        for status in outcomes.1 { histogram[status, default: 0] += 1 }
        print(
            "fuzz: \(Self.runs) inputs, exit codes \(histogram.sorted { $0.key < $1.key }), \(findings.count) findings"
        )
        // Not vacuous: the mutations reach the validators and also leave valid inputs.
        #expect(outcomes.1.count + findings.count >= Self.runs)
        #expect((histogram[78] ?? 0) >= Self.runs / 5, "\(histogram)")
        #expect((histogram[0] ?? 0) >= Self.runs / 10, "\(histogram)")
        #expect((histogram[64] ?? 0) >= 10, "\(histogram)")
        #expect(
            findings.isEmpty,
            "\(findings.count) of \(Self.runs) inputs misbehaved:\n\(findings.prefix(15).joined(separator: "\n---\n"))"
        )
        // A few minutes at most in `make test`.
        #expect(ContinuousClock.now - started < .seconds(300))
    }
}
