import DeployModel
import Foundation
import HADeployCore

/// Human lines with timestamps, for logs and pipes (not a terminal).
public final class PlainReporter: DeployReporter, @unchecked Sendable {
    private let output: any OutputSink
    private let stream: OutputChannel
    private let lock = NSLock()
    private var lastPercent: [String: Int] = [:]
    private let clock: any WallClock

    public init(output: any OutputSink, stream: OutputChannel = .standardOutput, clock: any WallClock) {
        self.output = output
        self.stream = stream
        self.clock = clock
    }

    /// The line with its time (`2026-11-27T09:20:09Z`), written under the lock: lines never interleave.
    private func line(_ text: String) {
        let stamped = "\(clock.now().formatted(.iso8601)) \(text)\n"
        lock.withLock { output.write(stamped, to: stream) }
    }

    /// Formats outside the lock (every device's task reports here); only the write and the progress
    /// buckets are serialized.
    public func handle(_ event: DeployEvent) {
        switch event {
        case .runStarted(let id, let version, let devices):
            line("deploy \(id): version \(version) to \(devices.joined(separator: ", "))")
        case .message(let text):
            line(text)
        case .stepStarted(let device, let step):
            line("[\(device)] \(step)…")
        case .progress(let device, let progress, let rate):
            // Every 25 % is enough in a log.
            let bucket = progress.percent / 25
            let changed = lock.withLock {
                defer { lastPercent[device] = bucket }
                return lastPercent[device] != bucket
            }
            if changed {
                line(
                    "[\(device)] \(progress.phase) \(progress.percent)% (\(Format.bytes(progress.bytesDone))/\(Format.bytes(progress.bytesTotal)), \(Format.rate(rate)))"
                )
            }
        case .stepFinished(let device, let step, let seconds, let status, let detail):
            line(
                "[\(device)] \(step) \(status.rawValue) in \(Format.seconds(seconds))\(detail.map { ": \($0)" } ?? "")"
            )
        case .deviceFinished(let result):
            line("[\(result.id)] \(result.outcome.rawValue)\(result.reason.map { ": \($0)" } ?? "")")
        case .runFinished(let report):
            let table = SummaryTable.render(report) + "\n"
            lock.withLock { output.write(table, to: stream) }
        }
    }
}

/// One live line per device on a terminal, redrawn in place, then the summary table.
public final class TerminalReporter: DeployReporter, @unchecked Sendable {
    private let output: any OutputSink
    private let lock = NSLock()
    private var order: [String] = []
    private var status: [String: String] = [:]
    private var started: [String: Date] = [:]
    private var drawn = 0
    private var lastDraw = Date.distantPast
    private let clock: any WallClock

    public init(output: any OutputSink, clock: any WallClock) {
        self.output = output
        self.clock = clock
    }

    public func handle(_ event: DeployEvent) {
        lock.withLock {
            switch event {
            case .runStarted(let id, let version, let devices):
                order = devices
                for device in devices {
                    status[device] = "waiting"
                    started[device] = clock.now()
                }
                output.write("hadeploy \(version) — deploy \(id)\n", to: .standardError)
            case .message(let text):
                clear()
                output.write(text + "\n", to: .standardError)
            case .stepStarted(let device, let step):
                status[device] = step + "…"
            case .progress(let device, let progress, let rate):
                let width = 20
                let filled = min(width, max(0, progress.percent * width / 100))
                let bar =
                    String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                status[device] =
                    "\(progress.phase) \(bar) \(progress.percent)% \(Format.bytes(progress.bytesDone))/\(Format.bytes(progress.bytesTotal)) \(Format.rate(rate))"
                // Redraw at most 10 times a second.
                guard clock.now().timeIntervalSince(lastDraw) > 0.1 else { return }
            case .stepFinished:
                break
            case .deviceFinished(let result):
                status[result.id] =
                    (result.succeeded ? "✔ " : "✘ ") + result.outcome.rawValue
                    + (result.reason.map { " — \($0)" } ?? "")
            case .runFinished(let report):
                draw()
                output.write("\n" + SummaryTable.render(report) + "\n", to: .standardError)
                return
            }
            draw()
        }
    }

    private func clear() {
        guard drawn > 0 else { return }
        output.writeControl("\u{1B}[\(drawn)A\u{1B}[J", to: .standardError)
        drawn = 0
    }

    private func draw() {
        clear()
        let now = clock.now()
        lastDraw = now
        let nameWidth = order.map(\.count).max() ?? 8
        var text = ""
        for device in order {
            let elapsed = now.timeIntervalSince(started[device] ?? now)
            let name = device.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            text +=
                "  \(name)  \(Format.seconds(elapsed).padding(toLength: 7, withPad: " ", startingAt: 0)) \(status[device] ?? "")\n"
        }
        output.write(text, to: .standardError)
        drawn = order.count
    }
}

/// JSON Lines on stdout: one valid JSON object per line, whatever happens.
public final class JSONLinesReporter: DeployReporter, @unchecked Sendable {
    private let output: any OutputSink
    private let lock = NSLock()
    private let encoder: JSONEncoder
    private let clock: any WallClock

    public init(output: any OutputSink, clock: any WallClock) {
        self.output = output
        self.clock = clock
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
    }

    public struct Line: Codable {
        public var event: String
        public var time = Date.distantPast
        public var device: String?
        public var step: String?
        public var seconds: Double?
        public var status: StepStatus?
        public var detail: String?
        public var progress: TransferProgress?
        public var bytesPerSecond: Double?
        public var result: DeviceResult?
        public var report: DeployReport?
        public var message: String?
        public var devices: [String]?
        public var deployID: String?
        public var version: String?
    }

    public func handle(_ event: DeployEvent) {
        var line: Line
        switch event {
        case .runStarted(let id, let version, let devices):
            line = Line(event: "run_started", devices: devices, deployID: id, version: version)
        case .message(let text):
            line = Line(event: "message", message: text)
        case .stepStarted(let device, let step):
            line = Line(event: "step_started", device: device, step: step)
        case .progress(let device, let progress, let rate):
            line = Line(event: "progress", device: device, progress: progress, bytesPerSecond: rate)
        case .stepFinished(let device, let step, let seconds, let status, let detail):
            line = Line(
                event: "step_finished", device: device, step: step, seconds: seconds, status: status,
                detail: detail)
        case .deviceFinished(let result):
            line = Line(event: "device_finished", device: result.id, result: result)
        case .runFinished(let report):
            line = Line(event: "run_finished", report: report)
        }
        line.time = clock.now()
        guard let data = try? encoder.encode(line) else { return }
        lock.withLock { output.write(String(decoding: data, as: UTF8.self) + "\n", to: .standardOutput) }
    }
}

/// Sends every event to several reporters (JSON on stdout + human lines on stderr).
public struct FanOutReporter: DeployReporter {
    public var reporters: [any DeployReporter]
    public init(_ reporters: [any DeployReporter]) { self.reporters = reporters }
    public func handle(_ event: DeployEvent) { for reporter in reporters { reporter.handle(event) } }
}

/// Sizes, rates and durations as the reporters print them.
public enum Format {
    public static func bytes(_ count: Int64) -> String {
        let value = Double(count)
        if value >= 1_000_000_000 { return FixedPoint.text(value / 1e9, decimals: 2) + " GB" }
        if value >= 1_000_000 { return FixedPoint.text(value / 1e6, decimals: 1) + " MB" }
        if value >= 1_000 { return FixedPoint.text(value / 1e3, decimals: 0) + " kB" }
        return "\(count) B"
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        bytes(Int64(clampingDouble: bytesPerSecond)) + "/s"
    }

    static func seconds(_ value: Double) -> String {
        FixedPoint.text(value, decimals: value < 10 ? 1 : 0) + "s"
    }
}

/// The closing table: device, iOS, transport, version, result, time, reason.
public enum SummaryTable {
    public static func render(_ report: DeployReport) -> String {
        let header = ["DEVICE", "IOS", "TRANSPORT", "VERSION", "RESULT", "TIME", "REASON"]
        var rows = [header]
        for result in report.results {
            rows.append([
                result.id, result.transport == "mac" ? "macOS" : result.ios, result.transport, result.version,
                result.outcome.rawValue,
                Format.seconds(result.seconds), result.reason ?? "",
            ])
        }
        let lines = aligned(rows)
        var counts: [DeviceOutcome: Int] = [:]
        for result in report.results { counts[result.outcome, default: 0] += 1 }
        let order: [DeviceOutcome] = [
            .succeeded, .failed, .unverified, .installedOnly, .notAvailable, .cancelled, .notStarted,
        ]
        let parts = order.compactMap { outcome in counts[outcome].map { "\($0) \(outcome.rawValue)" } }
        let failed = report.results.filter { !$0.succeeded }.count
        var footer = "\(report.results.count) device(s): " + parts.joined(separator: ", ")
        if report.interrupted {
            footer += " — interrupted, partial results"
        } else if failed == 0 {
            footer += " — no failures"
        }
        return (lines + [footer] + screens(report)).joined(separator: "\n")
    }

    /// What the screenshots showed against each device's baseline, and against each other.
    static func screens(_ report: DeployReport) -> [String] {
        var lines: [String] = []
        let checked = report.results.compactMap { result in result.visual.map { (result.id, $0) } }
        if !checked.isEmpty {
            lines.append("screens: " + checked.map { "\($0) \($1.summary)" }.joined(separator: " · "))
        }
        if let parity = report.parity, !parity.isEmpty {
            lines.append(
                "parity: "
                    + parity.map {
                        "\($0.reference)/\($0.device) \($0.verdict.rawValue) (\(String(format: "%.1f", $0.matchPercentage)) %)"
                    }.joined(separator: " · "))
        }
        return lines
    }

    /// Rows as lines, each column as wide as its widest cell (the last one not padded).
    static func aligned(_ rows: [[String]]) -> [String] {
        let count = rows.map(\.count).max() ?? 0
        let widths = (0..<count).map { column in
            rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1
                    ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
