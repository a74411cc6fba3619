import Foundation
import HomeAssistant
import Testing

/// The Swift side of `scripts/bench-ha.py`, which sets the HA_BENCH_* variables and starts the
/// server. Opt-in: without HA_BENCH_URL it does not run (it is a measurement, not a check).
@Suite("Benchmark (scripts/bench-ha.py)")
struct BenchmarkTests {
    static let environment = ProcessInfo.processInfo.environment

    struct Summary: Codable {
        let n: Int
        let min: Double
        let median: Double
        let max: Double

        init(_ samples: [Double]) {
            let sorted = samples.sorted()
            n = sorted.count
            min = sorted.first ?? 0
            max = sorted.last ?? 0
            median =
                sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
    }

    struct Results: Codable {
        let preflight_ms: Summary
        let event_delay_ms: Summary
        let states: Int
        let missing: Int
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    @Test(
        "preflight time and fire_event-to-subscriber delay", .enabled(if: environment["HA_BENCH_URL"] != nil))
    func benchmark() async throws {
        let env = Self.environment
        let token = AccessToken(
            try String(contentsOfFile: try #require(env["HA_BENCH_TOKEN_FILE"]), encoding: .utf8))
        let options = ClientOptions(
            server: try ServerAddress(try #require(env["HA_BENCH_URL"])), token: token)
        let dashboard = try #require(env["HA_BENCH_DASHBOARD"])
        let runs = Int(env["HA_BENCH_RUNS"] ?? "") ?? 20
        let events = Int(env["HA_BENCH_EVENTS"] ?? "") ?? 50
        let clock = ContinuousClock()

        var preflight: [Double] = []
        var last: PreflightReport?
        for _ in 0..<runs {
            let start = clock.now
            last = await Preflight(options: options).run(dashboard: .named(dashboard))
            preflight.append(Self.milliseconds(clock.now - start))
        }
        let report = try #require(last)
        #expect(report.passed)
        if env["HA_BENCH_BREAKDOWN"] != nil {
            let connection = HomeAssistantConnection(options: options)
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
            await connection.close()
        }

        let subscriber = HomeAssistantConnection(options: options)
        let firer = HomeAssistantConnection(options: options)
        try await subscriber.connect()
        try await firer.connect()
        let subscription = try await subscriber.subscribe(to: "hadeploy_bench_event")
        var iterator = subscription.makeAsyncIterator()
        var delays: [Double] = []
        for index in 0..<events {
            let start = clock.now
            try await firer.fireEvent("hadeploy_bench_event", data: ["n": .number(Double(index))])
            while let event = try await iterator.next() {
                if event.data["n"] == .number(Double(index)) { break }
            }
            delays.append(Self.milliseconds(clock.now - start))
        }
        await subscriber.close()
        await firer.close()

        let results = Results(
            preflight_ms: Summary(preflight), event_delay_ms: Summary(delays),
            states: report.entityCount ?? 0,
            missing: report.missingEntities.count)
        let out = try #require(env["HA_BENCH_OUT"])
        try JSONEncoder().encode(results).write(to: URL(fileURLWithPath: out))
    }
}
