import DeployModel
import Foundation
import HADeployCore
import Templating

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--report DIR` cannot be written: found before the first device.
public struct ReportFolderUnusable: Error, CustomStringConvertible, ExitStatusProviding {
    public var folder: String
    public var reason: String

    public var description: String {
        "cannot write the report to \(folder): \(reason). Nothing was deployed: choose another --report "
            + "folder, or fix this one"
    }

    public var exitStatus: ExitStatus { .failure }
}

/// Writes `summary.json`, `junit.xml` and `index.html` (a contact sheet viewable offline) into the
/// report directory; screenshots and crash logs are already there, written by the pipeline.
public struct ReportWriter: Sendable {
    public var directory: URL
    public var fileSystem: any FileSystem

    public init(directory: URL, fileSystem: any FileSystem) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    /// Checks, before any device is touched, that the report can be written here: the folder is
    /// created (with its parents) and a probe file is written, flushed and removed. A file in the
    /// way, a read-only folder or a full disk is found now, not after every device was deployed.
    /// `displayName` is the folder as the user gave it.
    public static func checkWritable(_ directory: URL, displayName: String, fileSystem: any FileSystem) throws
    {
        var isDirectory: ObjCBool = false
        if fileSystem.fileExists(atPath: directory.path, isDirectory: &isDirectory),
            !isDirectory.boolValue
        {
            throw ReportFolderUnusable(folder: displayName, reason: "it is a file, not a folder")
        }
        do {
            try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ReportFolderUnusable(
                folder: displayName, reason: "it cannot be created (\(SystemErrorText.describe(error)))")
        }
        let probe = directory.appendingPathComponent(".hadeploy-probe-\(getpid())").path
        let fd = open(probe, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ReportFolderUnusable(
                folder: displayName,
                reason: "a file cannot be created in it (\(SystemErrorText.posix(errno)))")
        }
        defer { unlink(probe) }
        // As much as a small report: a full disk refuses it (a zero-byte file would still fit).
        let block = [UInt8](repeating: 0x20, count: 64 << 10)
        let written = block.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let writeError = written == block.count ? 0 : (written < 0 ? errno : ENOSPC)
        let syncError = writeError == 0 && fsync(fd) != 0 ? errno : 0
        let closeError = close(fd) != 0 ? errno : 0
        if let code = [writeError, syncError, closeError].first(where: { $0 != 0 }) {
            throw ReportFolderUnusable(
                folder: displayName, reason: "writing a file in it failed (\(SystemErrorText.posix(code)))")
        }
    }

    public func write(_ report: DeployReport) throws {
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        let writer = FileWriter(fileSystem: fileSystem)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // A server URL with a password, in a step's message or the report header, stays out of files
        // that CI uploads as artifacts.
        let summary = URLCredentials.redact(String(decoding: try encoder.encode(report), as: UTF8.self))
        try writer.write(Data(summary.utf8), to: directory.appendingPathComponent("summary.json"))
        try writer.write(
            Data(URLCredentials.redact(junit(report)).utf8), to: directory.appendingPathComponent("junit.xml")
        )
        try writer.write(
            Data(URLCredentials.redact(html(report)).utf8), to: directory.appendingPathComponent("index.html")
        )
    }

    /// XML-escaped text; the control characters XML 1.0 cannot hold at all become `?`.
    static func xml(_ text: String) -> String {
        var cleaned = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\u{00}"..."\u{08}", "\u{0B}", "\u{0C}", "\u{0E}"..."\u{1F}": cleaned += "?"
            default: cleaned.unicodeScalars.append(scalar)
            }
        }
        return XMLText.escape(cleaned)
    }

    public func junit(_ report: DeployReport) -> String {
        let failures = report.results.filter {
            $0.outcome == .failed || $0.outcome == .notStarted || $0.launchFailed
        }.count
        let skipped = report.results.filter {
            $0.outcome == .notAvailable || $0.outcome == .cancelled || $0.outcome == .unverified
                || ($0.outcome == .installedOnly && !$0.launchFailed)
        }.count
        let total = report.results.reduce(0) { $0 + $1.seconds }
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>"]
        lines.append(
            "<testsuites name=\"hadeploy\" tests=\"\(report.results.count)\" failures=\"\(failures)\" time=\"\(String(format: "%.3f", total))\">"
        )
        lines.append(
            "  <testsuite name=\"deploy \(Self.xml(report.version))\" id=\"\(Self.xml(report.deployID))\" tests=\"\(report.results.count)\" failures=\"\(failures)\" skipped=\"\(skipped)\" time=\"\(String(format: "%.3f", total))\">"
        )
        for result in report.results {
            let name = Self.xml("\(result.name) (\(result.id))")
            lines.append(
                "    <testcase classname=\"hadeploy.\(Self.xml(result.transport))\" name=\"\(name)\" time=\"\(String(format: "%.3f", result.seconds))\">"
            )
            switch result.outcome {
            case .installedOnly where result.launchFailed:
                let step = result.failedStep.map { " in \($0)" } ?? ""
                lines.append(
                    "      <failure message=\"\(Self.xml("installed only: \(result.reason ?? "not launched")"))\" type=\"failed\(Self.xml(step))\">\(Self.xml(stepLog(result)))</failure>"
                )
            case .failed, .notStarted:
                let step = result.failedStep.map { " in \($0)" } ?? ""
                lines.append(
                    "      <failure message=\"\(Self.xml(result.reason ?? "failed"))\" type=\"failed\(Self.xml(step))\">\(Self.xml(stepLog(result)))</failure>"
                )
            case .notAvailable, .cancelled, .unverified, .installedOnly:
                lines.append(
                    "      <skipped message=\"\(Self.xml("\(result.outcome.rawValue): \(result.reason ?? "")"))\"/>"
                )
            case .succeeded:
                break
            }
            lines.append("      <system-out>\(Self.xml(stepLog(result)))</system-out>")
            lines.append("    </testcase>")
        }
        lines.append("  </testsuite>")
        lines.append("</testsuites>")
        return lines.joined(separator: "\n") + "\n"
    }

    func stepLog(_ result: DeviceResult) -> String {
        result.steps.map { step in
            "\(step.name): \(step.status.rawValue) (\(String(format: "%.2f", step.seconds)) s)\(step.detail.map { " — \($0)" } ?? "")"
        }.joined(separator: "\n")
    }

    /// The badge a device gets on the contact sheet: what happened, at a glance.
    public static func badge(_ result: DeviceResult) -> (label: String, style: String) {
        switch result.outcome {
        case .succeeded:
            if case .loaded = result.verification { return ("verified", "verified") }
            return ("not verified", "installed")
        case .installedOnly: return ("installed only", "installed")
        // Launched, but the dashboard check did not run: amber like installed-only, said plainly.
        case .unverified: return ("not verified", "installed")
        case .failed: return ("failed", "failed")
        case .notAvailable: return ("not available", "other")
        case .cancelled: return ("cancelled", "other")
        case .notStarted: return ("not started", "failed")
        }
    }

    /// A reason as one short line: its first line, cut at a word near `limit` characters.
    public static func shortReason(_ reason: String, limit: Int = 120) -> String {
        let first = reason.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard first.count > limit else { return first }
        let cut = first.prefix(limit)
        let end = cut.lastIndex(of: " ") ?? cut.endIndex
        return String(cut[..<end]) + "…"
    }

    static func verdictStyle(_ verdict: VisualVerdict) -> String {
        switch verdict {
        case .same: return "same"
        case .changedALittle: return "little"
        case .different: return "different"
        case .noBaseline: return "new"
        case .unavailable: return "unavailable"
        }
    }

    /// Baseline, new and difference side by side, for a screen that changed (empty otherwise).
    static func comparison(_ visual: VisualCheck, screenshot: String?, name: String) -> String {
        guard visual.verdict.isChange, let screenshot else { return "" }
        let h = xml
        let figures = [
            ("baseline", visual.baseline, "the last verified screenshot"),
            ("new", Optional(screenshot), "this deploy's screenshot"),
            ("diff", visual.diff, "the difference: red darker, blue lighter, yellow anti-aliasing"),
        ]
        return "<div class=\"compare\">"
            + figures.map { kind, path, caption in
                let body =
                    path.map { "<img src=\"\(h($0))\" alt=\"\(kind) screenshot of \(h(name))\">" }
                    ?? "<div class=\"noshot\">none</div>"
                return "<figure data-kind=\"\(kind)\"><figcaption>\(h(caption))</figcaption>\(body)</figure>"
            }.joined() + "</div>"
    }

    /// Devices of one screen size showing one dashboard, compared with each other.
    static func parityTable(_ parity: [ParityCheck]) -> String {
        guard !parity.isEmpty else { return "" }
        let h = xml
        let rows = parity.map { check in
            let diff = check.diff.map { "<a href=\"\(h($0))\">diff</a>" } ?? ""
            return
                "<tr><td>\(h(check.reference))</td><td>\(h(check.device))</td><td>\(h(check.dashboard))</td>"
                + "<td>\(h(check.screen))</td><td class=\"visual \(verdictStyle(check.verdict))\">"
                + "\(h(check.verdict.rawValue))</td><td>\(String(format: "%.1f %%", check.matchPercentage))</td>"
                + "<td>\(diff)</td></tr>"
        }.joined()
        return
            "<h2>Parity: same dashboard, same screen size</h2><table class=\"parity\"><tr><th>reference</th>"
            + "<th>device</th><th>dashboard</th><th>screen</th><th>verdict</th><th>alike</th><th></th></tr>"
            + rows + "</table>"
    }

    public func html(_ report: DeployReport) -> String {
        let h = Self.xml
        let formatter = ISO8601DateFormatter()
        var cards = ""
        var counts: [String: Int] = [:]
        for result in report.results {
            let badge = Self.badge(result)
            counts[badge.label, default: 0] += 1
            var picture =
                result.screenshot.map {
                    "<img src=\"\(h($0))\" alt=\"screenshot of \(h(result.name))\">"
                } ?? "<div class=\"noshot\">no screenshot</div>"
            var wide = false
            if let visual = result.visual {
                let comparison = Self.comparison(visual, screenshot: result.screenshot, name: result.name)
                wide = !comparison.isEmpty
                picture =
                    "<p class=\"visual \(Self.verdictStyle(visual.verdict))\">screen: \(h(visual.summary))</p>"
                    + (wide ? comparison : picture)
            }
            var verification = ""
            switch result.verification {
            case .loaded(let seconds):
                verification = String(format: "dashboard loaded in %.1f s", seconds)
                if let evidence = result.evidence, !evidence.isEmpty {
                    verification += " (\(evidence.map(\.rawValue).joined(separator: ", ")))"
                }
            case .notLoaded(let reason): verification = "not loaded: \(reason)"
            case .skipped(let reason):
                verification =
                    reason.hasPrefix("verification skipped") ? reason : "verification skipped: \(reason)"
            case .notRun: verification = "verification not run"
            }
            let steps = result.steps.map {
                "<tr><td>\(h($0.name))</td><td>\(h($0.status.rawValue))</td><td>\(String(format: "%.2f s", $0.seconds))</td><td>\(h($0.detail ?? ""))</td></tr>"
            }.joined()
            let crashes = result.crashReports.map { "<li>\(h($0))</li>" }.joined()
            // The reason once, short, under the badge; the whole text only in the folded details.
            let reason = result.reason.map { Self.shortReason($0) } ?? ""
            let fullReason =
                result.reason.flatMap { $0 == reason ? nil : "<pre class=\"reason\">\(h($0))</pre>" } ?? ""
            cards += """
                <section class="card\(wide ? " wide" : "")" data-device="\(h(result.id))">
                  <h2>\(h(result.name)) <small>\(h(result.id)) · \(result.transport == "mac" ? "macOS" : "iOS \(h(result.ios))") · \(h(result.transport))</small></h2>
                  <p><span class="badge \(badge.style)">\(h(badge.label))</span>\(reason.isEmpty ? "" : " <span class=\"why\">\(h(reason))</span>")</p>
                  \(picture)
                  <details><summary>details · \(String(format: "%.1f s", result.seconds))\(result.install.map { " · install: \($0.rawValue)" } ?? "")</summary>
                  \(fullReason)<p>\(h(verification))</p><table>\(steps)</table>
                  \(crashes.isEmpty ? "" : "<p>Crash reports:</p><ul>\(crashes)</ul>")
                  </details>
                </section>

                """
        }
        let tally = [
            "verified", "not verified", "installed only", "failed", "not started", "not available",
            "cancelled",
        ]
        .compactMap { label in
            counts[label].map { "\($0) \(label)" }
        }.joined(separator: " · ")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>hadeploy \(h(report.version)) — \(h(report.deployID))</title>
            <style>
            body{font-family:-apple-system,system-ui,sans-serif;margin:24px;background:#f5f5f7;color:#111}
            .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:16px}
            .card{background:#fff;border-radius:12px;padding:16px;box-shadow:0 1px 3px #0002}
            .card img{max-width:100%;border:1px solid #ccc;border-radius:6px}
            .noshot{height:160px;display:flex;align-items:center;justify-content:center;background:#eee;border-radius:6px;color:#777}
            h2{font-size:18px;margin:0 0 4px} h2 small{font-weight:normal;color:#666;font-size:13px}
            .badge{display:inline-block;padding:3px 10px;border-radius:999px;font-weight:bold;font-size:13px;color:#fff}
            .badge.verified{background:#1b873f} .badge.installed{background:#b07800} .badge.failed{background:#c62828}
            .badge.other{background:#6e6e73} .why{font-size:13px;color:#333}
            details{font-size:13px;color:#444;margin-top:6px} pre.reason{white-space:pre-wrap;font-size:12px}
            table{font-size:12px;border-collapse:collapse;width:100%}
            td{border-top:1px solid #eee;padding:2px 4px;vertical-align:top}
            .card.wide{grid-column:1/-1} .compare{display:flex;gap:12px}
            .compare figure{flex:1;margin:0} .compare figcaption{font-size:13px;color:#444;margin-bottom:4px}
            .visual{font-size:14px;margin:6px 0} .visual.same{color:#1b873f} .visual.little{color:#b07800}
            .visual.different{color:#c62828} .visual.new{color:#6e6e73} .visual.unavailable{color:#b07800}
            table.parity{max-width:900px;margin-top:16px;background:#fff} .parity th{text-align:left}
            </style></head><body>
            <h1>hadeploy — version \(h(report.version))</h1>
            <p>Deploy \(h(report.deployID)) · \(h(formatter.string(from: report.startedAt))) · \(report.results.count) device(s): \(h(tally))\(report.interrupted ? " · <strong>interrupted</strong>" : "")</p>
            <div class="grid">
            \(cards)</div>
            \(Self.parityTable(report.parity ?? []))
            </body></html>

            """
    }
}
