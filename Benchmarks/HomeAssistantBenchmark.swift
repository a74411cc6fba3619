import ArgumentParser
import Foundation
import HADeployCore
import HomeAssistant

/// `hadeploy-bench ha`: the Swift side of `scripts/bench-ha.py`, which starts Home Assistant, fills
/// it with entities and a dashboard, and passes the inputs as flags or HA_BENCH_* variables.
/// Measures the preflight and the fire_event → subscriber delay; writes JSON (`--out`, else stdout).
struct HomeAssistantBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ha",
        abstract: "Preflight time and fire_event-to-subscriber delay against a running Home Assistant.")

    struct Results: Codable {
        let preflight_ms: Summary
        let event_delay_ms: Summary
        let states: Int
        let missing: Int
    }

    @Option(help: "Home Assistant base URL (env HA_BENCH_URL).")
    var url: String?

    @Option(help: "File holding a long-lived access token (env HA_BENCH_TOKEN_FILE).")
    var tokenFile: String?

    @Option(help: "Dashboard url_path the preflight checks (env HA_BENCH_DASHBOARD).")
    var dashboard: String?

    @Option(help: "Preflight runs (env HA_BENCH_RUNS, default 20).")
    var runs: Int?

    @Option(help: "Events fired (env HA_BENCH_EVENTS, default 50).")
    var events: Int?

    @Option(help: "Write the results JSON here instead of stdout (env HA_BENCH_OUT).")
    var out: String?

    @Flag(help: "Also print per-request timings (env HA_BENCH_BREAKDOWN).")
    var breakdown = false

    func run() async throws {
        let tokenPath = try BenchEnvironment.required(
            tokenFile, "HA_BENCH_TOKEN_FILE", option: "--token-file")
        let token = AccessToken(try String(contentsOfFile: tokenPath, encoding: .utf8))
        let options = ClientOptions(
            server: try ServerAddress(try BenchEnvironment.required(url, "HA_BENCH_URL", option: "--url")),
            token: token, clock: HADeployContext.live().clock)
        let dashboard = try BenchEnvironment.required(dashboard, "HA_BENCH_DASHBOARD", option: "--dashboard")
        let runs = try BenchEnvironment.integer(runs, "HA_BENCH_RUNS", default: 20)
        let events = try BenchEnvironment.integer(events, "HA_BENCH_EVENTS", default: 50)
        guard runs > 0, events > 0 else { throw BenchFailure("--runs and --events must be at least 1") }

        let (preflight, report) = try await measurePreflight(options, dashboard: dashboard, runs: runs)
        if breakdown || ProcessInfo.processInfo.environment["HA_BENCH_BREAKDOWN"] != nil {
            try await printBreakdown(options, dashboard: dashboard)
        }
        let delays = try await measureEventDelay(options, events: events)

        let results = Results(
            preflight_ms: Summary(preflight), event_delay_ms: Summary(delays),
            states: report.entityCount ?? 0, missing: report.missingEntities.count)
        let json = try JSONEncoder().encode(results)
        if let out = BenchEnvironment.value(out, "HA_BENCH_OUT") {
            try json.write(to: URL(fileURLWithPath: out))
        } else {
            print(String(decoding: json, as: UTF8.self))
        }
    }

    private func measurePreflight(_ options: ClientOptions, dashboard: String, runs: Int) async throws
        -> ([Double], PreflightReport)
    {
        let clock = ContinuousClock()
        var samples: [Double] = []
        var last: PreflightReport?
        for _ in 0..<runs {
            let start = clock.now
            last = await Preflight(options: options).run(dashboard: .named(dashboard))
            samples.append(Timing.milliseconds(clock.now - start))
        }
        guard let report = last, report.passed else {
            let errors = last?.errors.map(\.description).joined(separator: "; ") ?? "no run"
            throw BenchFailure("the preflight did not pass, so its timings mean nothing: \(errors)")
        }
        return (samples, report)
    }

    /// Where a preflight's time goes, request by request (the raw get_states is the known slow path).
    private func printBreakdown(_ options: ClientOptions, dashboard: String) async throws {
        let clock = ContinuousClock()
        let connection = HomeAssistantConnection(options: options)
        do {
            var start = clock.now
            try await connection.connect()
            print("connect+auth \(clock.now - start)")
            for _ in 0..<3 {
                start = clock.now
                _ = try await connection.ping()
                print("ping \(clock.now - start)")
                start = clock.now
                _ = try await connection.send(RawRequest("get_states"))
                print("raw get_states \(clock.now - start)")
                start = clock.now
                _ = try await connection.states()
                print("typed get_states \(clock.now - start)")
                start = clock.now
                _ = try await connection.lovelaceConfig(urlPath: dashboard)
                print("lovelace/config \(clock.now - start)")
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    /// Connection B fires, the clock stops when connection A's subscriber has the event.
    private func measureEventDelay(_ options: ClientOptions, events: Int) async throws -> [Double] {
        let clock = ContinuousClock()
        let subscriber = HomeAssistantConnection(options: options)
        let firer = HomeAssistantConnection(options: options)
        // One deadline for the whole phase (a per-event one would add to the sub-millisecond figure):
        // closing the subscriber ends its subscription, so a lost event cannot hang the run.
        let limit = Duration.seconds(60 + events)
        let watchdog = Task {
            try await Task.sleep(for: limit)
            await subscriber.close()
        }
        defer { watchdog.cancel() }
        do {
            try await subscriber.connect()
            try await firer.connect()
            let subscription = try await subscriber.subscribe(to: "hadeploy_bench_event")
            var iterator = subscription.makeAsyncIterator()
            var delays: [Double] = []
            for index in 0..<events {
                let start = clock.now
                try await firer.fireEvent("hadeploy_bench_event", data: ["n": .number(Double(index))])
                var seen = false
                while let event = try await iterator.next() {
                    if event.data["n"] == .number(Double(index)) {
                        seen = true
                        break
                    }
                }
                guard seen else {
                    throw BenchFailure(
                        "event \(index) did not reach the subscriber within \(limit) of the start")
                }
                delays.append(Timing.milliseconds(clock.now - start))
            }
            await subscriber.close()
            await firer.close()
            return delays
        } catch {
            await subscriber.close()
            await firer.close()
            throw error
        }
    }
}
