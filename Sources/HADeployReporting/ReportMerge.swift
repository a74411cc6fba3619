import DeployModel
import Foundation
import HADeployCore

/// One host's output, as `hadeploy <its devices> --json --report DIR` left it: the run's report
/// (from DIR/summary.json, else from the `run_finished` line of the JSON Lines it printed) and the
/// folder its screenshots and crash logs are in (nil for JSON Lines alone).
public struct ReportMergeInput: Sendable {
    /// The path as the user gave it, for messages.
    public var name: String
    public var report: DeployReport
    public var folder: URL?

    /// Reads `path`: a report folder (summary.json; without it, the one `*.jsonl` file in it) or a
    /// JSON Lines file. Throws a problem naming the file and what is wrong with it.
    public static func load(_ path: String, base: URL, fileSystem: any FileSystem) throws -> ReportMergeInput
    {
        let url = URL(fileURLWithPath: path, relativeTo: base).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard fileSystem.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ReportMergeProblem("\(path): no such file or folder")
        }
        guard isDirectory.boolValue else {
            try checkRegular(url, name: path, fileSystem: fileSystem)
            return ReportMergeInput(name: path, report: try runFinished(url, name: path), folder: nil)
        }
        let summary = url.appendingPathComponent("summary.json")
        let summaryName = (path as NSString).appendingPathComponent("summary.json")
        if fileSystem.fileExists(atPath: summary.path) {
            let data: Data
            do {
                try checkRegular(summary, name: summaryName, fileSystem: fileSystem)
                data = try Data(contentsOf: summary)
            } catch let problem as ReportMergeProblem {
                throw problem
            } catch {
                throw ReportMergeProblem(
                    "\(summaryName): cannot be read (\(SystemErrorText.describe(error)))")
            }
            return ReportMergeInput(name: path, report: try decode(data, name: summaryName), folder: url)
        }
        let lines = ((try? fileSystem.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { $0.hasSuffix(".jsonl") }.sorted()
        guard lines.count == 1 else {
            throw ReportMergeProblem(
                "\(path): no summary.json"
                    + (lines.isEmpty
                        ? " and no *.jsonl"
                        : " and \(lines.count) *.jsonl files (\(lines.joined(separator: ", ")))")
                    + " — give the folder of `hadeploy … --report \(path)` or the file its --json output went to"
            )
        }
        let file = url.appendingPathComponent(lines[0])
        try checkRegular(
            file, name: (path as NSString).appendingPathComponent(lines[0]), fileSystem: fileSystem)
        return ReportMergeInput(
            name: path,
            report: try runFinished(file, name: (path as NSString).appendingPathComponent(lines[0])),
            folder: url)
    }

    /// The most bytes a summary.json or JSON Lines file is read into memory.
    static let maximumReportBytes: Int64 = 256 << 20

    /// A summary or JSON Lines file is read only when it is a regular file of a report's size: a
    /// FIFO would wait for ever, a device or a huge file would fill the memory.
    static func checkRegular(_ url: URL, name: String, fileSystem: any FileSystem) throws {
        guard let attributes = try? fileSystem.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)
        else { return }
        if let type = attributes[.type] as? FileAttributeType, type != .typeRegular {
            throw ReportMergeProblem("\(name): not a regular file (it is \(SystemErrorText.kind(type)))")
        }
        if let size = (attributes[.size] as? NSNumber)?.int64Value, size > maximumReportBytes {
            throw ReportMergeProblem(
                "\(name): \(size) bytes, more than the \(maximumReportBytes >> 20) MB a hadeploy report can be"
            )
        }
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    static func decode(_ data: Data, name: String) throws -> DeployReport {
        do {
            return try decoder().decode(DeployReport.self, from: data)
        } catch {
            throw ReportMergeProblem("\(name): not a hadeploy summary (\(describe(error)))")
        }
    }

    /// The report of the last `run_finished` line of `--json` output.
    static func runFinished(_ url: URL, name: String) throws -> DeployReport {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw ReportMergeProblem("\(name): cannot be read as text (\(SystemErrorText.describe(error)))")
        }
        struct Line: Decodable {
            var event: String?
            var report: DeployReport?
        }
        var found: DeployReport?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where line.contains("\"run_finished\"") {
            do {
                let decoded = try decoder().decode(Line.self, from: Data(line.utf8))
                if decoded.event == "run_finished", let report = decoded.report { found = report }
            } catch {
                throw ReportMergeProblem(
                    "\(name):\(index + 1): a broken run_finished line (\(describe(error)))")
            }
        }
        guard let found else {
            throw ReportMergeProblem(
                "\(name): no run_finished line — the run did not finish (its job was cancelled or crashed?), "
                    + "or this is not `hadeploy … --json` output")
        }
        return found
    }

    /// A decoding error as one line: what is wrong and where (the JSON keys leading to it).
    static func describe(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
                .joined()
            return keys.isEmpty ? "" : " at \(keys.hasPrefix(".") ? String(keys.dropFirst()) : keys)"
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "\(key.stringValue) is missing\(path(context))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\(context.debugDescription)\(path(context))"
        case DecodingError.dataCorrupted(let context):
            let underlying =
                (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return (underlying ?? context.debugDescription) + path(context)
        default:
            return SystemErrorText.describe(error)
        }
    }
}

/// Why inputs cannot be merged: every problem found, each naming its file or device.
public struct ReportMergeProblem: Error, CustomStringConvertible, ExitStatusProviding {
    public var problems: [String]

    public init(_ problem: String) { problems = [problem] }
    public init(problems: [String]) { self.problems = problems }

    public var description: String {
        "cannot merge the reports:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
            + "\nNothing was written."
    }

    public var exitStatus: ExitStatus { .usage }
}

/// Per-host reports of one deploy made into the report one run over all their devices would have
/// written: the devices in input order, one version, the exit code a single run would give.
public enum ReportMerger {
    public static func merge(_ inputs: [ReportMergeInput]) throws -> DeployReport {
        guard let first = inputs.first else {
            throw ReportMergeProblem("no input: name the per-host folders")
        }
        var problems: [String] = []
        var owner: [String: String] = [:]
        for input in inputs {
            for result in input.report.results {
                if let other = owner[result.id] {
                    problems.append(
                        "device \(result.id) is in both \(other) and \(input.name): each device belongs to one "
                            + "host's run")
                } else {
                    owner[result.id] = input.name
                }
            }
        }
        for input in inputs.dropFirst() {
            if input.report.version != first.report.version {
                problems.append(
                    "\(input.name) deployed version \(input.report.version), \(first.name) version "
                        + "\(first.report.version): merge the runs of one commit")
            }
            if input.report.verify != first.report.verify {
                problems.append(
                    "\(input.name) ran \(input.report.verify ? "with" : "without") the dashboard check, "
                        + "\(first.name) \(first.report.verify ? "with" : "without"): merge runs of one plan")
            }
        }
        guard problems.isEmpty else { throw ReportMergeProblem(problems: problems) }
        let ids = inputs.map(\.report.deployID).reduce(into: [String]()) {
            if !$0.contains($1) { $0.append($1) }
        }
        let results = inputs.flatMap(\.report.results)
        let interrupted = inputs.contains { $0.report.interrupted }
        let reportProblems = inputs.compactMap { input in
            input.report.reportProblem.map { "\(input.name): \($0)" }
        }
        let failed = results.contains { !$0.succeeded } || interrupted || !reportProblems.isEmpty
        return DeployReport(
            deployID: ids.joined(separator: "+"), version: first.report.version,
            startedAt: inputs.map(\.report.startedAt).min() ?? first.report.startedAt,
            finishedAt: inputs.map(\.report.finishedAt).max() ?? first.report.finishedAt,
            verify: first.report.verify, interrupted: interrupted, results: results,
            exitCode: failed ? ExitStatus.failure.rawValue : ExitStatus.success.rawValue,
            reportProblem: reportProblems.isEmpty ? nil : reportProblems.joined(separator: "; "))
    }

    /// Writes the merged report into `directory` as a run would: each device's screenshot, its
    /// comparison pictures and crash logs copied from its input's folder (paths rewritten to the new
    /// folder; a picture that is not there is dropped rather than shown broken), then summary.json,
    /// junit.xml and index.html. Only the names hadeploy writes are copied, and only regular files of
    /// a screenshot's size, never through a symbolic link: anything else in an input's summary.json
    /// (`../`, an absolute path, a remote URL, a FIFO, a link) is refused — named in `refused` and in
    /// the report's problem, so the merge fails — while every other file is still copied.
    public static func write(
        _ report: DeployReport, inputs: [ReportMergeInput], to directory: URL, fileSystem: any FileSystem
    ) throws
        -> (report: DeployReport, refused: [String])
    {
        var report = report
        var refused: [String] = []
        let sources = Dictionary(
            inputs.flatMap { input in input.report.results.map { ($0.id, input) } },
            uniquingKeysWith: { first, _ in first })
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        for index in report.results.indices {
            let result = report.results[index]
            let input = sources[result.id]
            let label = "\(input?.name ?? "?"): device \(result.id)"
            /// Copies a picture; its path when it is in the merged folder now, else nil.
            func picture(_ path: String, _ what: String, _ names: [String]?) -> String? {
                guard let names else {
                    refused.append(
                        "\(label): its \(what) \(quoted(path)) is not a name hadeploy writes "
                            + "(\(what == "screenshot" ? "screenshots/<device>.png" : "screenshots/baseline|diff/<device>.png")): not copied"
                    )
                    return nil
                }
                guard let folder = input?.folder else { return nil }
                do {
                    return try ReportFiles.copy(names, from: folder, to: directory) ? path : nil
                } catch {
                    refused.append("\(label): its \(what) was not copied: \(error)")
                    return nil
                }
            }
            if let screenshot = result.screenshot {
                report.results[index].screenshot = picture(
                    screenshot, "screenshot", ReportFiles.screenshot(screenshot, device: result.id))
            }
            if var visual = result.visual {
                visual.baseline = visual.baseline.flatMap {
                    picture($0, "baseline picture", ReportFiles.comparisonPicture($0, device: result.id))
                }
                visual.diff = visual.diff.flatMap {
                    picture($0, "difference picture", ReportFiles.comparisonPicture($0, device: result.id))
                }
                report.results[index].visual = visual
            }
            report.results[index].crashReports = result.crashReports.map { path in
                // A crash log stays listed even when it cannot be copied: the device did crash.
                guard let names = ReportFiles.crashReport(path, device: result.id) else {
                    refused.append(
                        "\(label): its crash log \(quoted(path)) is not where hadeploy keeps crash logs "
                            + "(crashes/<device>/<name>.ips): not copied")
                    return path
                }
                guard let folder = input?.folder else { return path }
                do {
                    guard try ReportFiles.copy(names, from: folder, to: directory) else { return path }
                    return directory.appendingPathComponent(names.joined(separator: "/")).path
                } catch {
                    refused.append("\(label): its crash log was not copied: \(error)")
                    return path
                }
            }
        }
        if !refused.isEmpty {
            let problem = "\(refused.count) file(s) of the inputs refused: " + refused.joined(separator: "; ")
            report.reportProblem = report.reportProblem.map { $0 + "; " + problem } ?? problem
            report.exitCode = ExitStatus.failure.rawValue
        }
        try ReportWriter(directory: directory, fileSystem: fileSystem).write(report)
        return (report, refused)
    }

    /// A path from an input as one short, printable quoted string.
    static func quoted(_ text: String) -> String {
        let printable = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return printable.count > 80 ? "'\(printable.prefix(80))…'" : "'\(printable)'"
    }
}
