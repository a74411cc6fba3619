import ArgumentParser
import DeployModel
import Foundation
import HADeployCore
import HADeployReporting

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Work with the reports of finished runs.",
        subcommands: [ReportMergeCommand.self])
}

struct ReportMergeCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge per-host reports of one deploy into one report and one exit code.",
        discussion: """
            Each input is what `hadeploy <that host's devices> --json --report DIR` left on
            one host: the DIR (summary.json, screenshots, crash logs), or a file holding its
            --json output. The result is what one run over all those devices would give:
            the summary table, summary.json, junit.xml and the contact sheet (with --report),
            and its exit code: 0 every device succeeded, 1 some device failed or a run was
            interrupted. Refused, with nothing written (exit 64): a device in two inputs,
            inputs of different versions or of runs with and without the dashboard check,
            an input that is missing or is not a hadeploy report. Only the files hadeploy
            writes are copied (screenshots/<device>.png, crashes/<device>/<name>.ips), as
            regular files of at most 128 MB; any other path in an input's summary.json is
            refused with a warning, and the merge exits 1.
            Examples:
              hadeploy report merge host-a host-b host-c --report report
              hadeploy report merge out/*/ --json > merged.jsonl
            """)

    @Argument(help: ArgumentHelp("Per-host report folders or --json output files.", valueName: "input"))
    var inputs: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the merged summary.json, junit.xml, screenshots and index.html here.", valueName: "dir"))
    var report: String?

    @Flag(
        name: .long, help: "JSON Lines on stdout, as `hadeploy --json` prints (the summary table on stderr).")
    var json = false

    func validate() throws {
        if inputs.isEmpty {
            throw ValidationError(
                "name the per-host report folders, e.g. `hadeploy report merge host-a host-b`")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let loaded = try Self.load(inputs, base: context.currentDirectory, fileSystem: context.fileSystem)
        if let report {
            // Compared as the folders really are: a link to an input, or `host-1/.`, is that input.
            let target = context.url(for: report).standardizedFileURL.resolvingSymlinksInPath()
            if let clash = loaded.first(where: {
                $0.folder?.standardizedFileURL.resolvingSymlinksInPath().path == target.path
            }) {
                throw ReportMergeProblem(
                    "--report \(report) is the input \(clash.name): write the merged report to a new folder"
                )
            }
            try ReportWriter.checkWritable(target, displayName: report, fileSystem: context.fileSystem)
        }
        var merged = try ReportMerger.merge(loaded)
        if let report {
            let written = try ReportMerger.write(
                merged, inputs: loaded, to: context.url(for: report), fileSystem: context.fileSystem)
            merged = written.report
            for refusal in written.refused { context.message("warning: \(refusal)") }
        }
        let table = SummaryTable.render(merged)
        if json {
            let reporter = JSONLinesReporter(output: context.output, clock: context.clock)
            for result in merged.results { reporter.handle(.deviceFinished(result)) }
            reporter.handle(.runFinished(merged))
            context.message(table)
        } else {
            context.print(table)
        }
        if let report {
            context.message(
                "merged \(loaded.count) run(s) into \((report as NSString).appendingPathComponent("index.html"))"
            )
        }
        if merged.exitCode != 0 { throw ExitCode(merged.exitCode) }
    }

    /// Every input read; every unreadable one named at once.
    static func load(_ inputs: [String], base: URL, fileSystem: any FileSystem) throws -> [ReportMergeInput] {
        var loaded: [ReportMergeInput] = []
        var problems: [String] = []
        for input in inputs {
            do {
                loaded.append(try ReportMergeInput.load(input, base: base, fileSystem: fileSystem))
            } catch let problem as ReportMergeProblem {
                problems += problem.problems
            }
        }
        guard problems.isEmpty else { throw ReportMergeProblem(problems: problems) }
        return loaded
    }
}
