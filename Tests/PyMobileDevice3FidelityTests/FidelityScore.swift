import Foundation
import NIOConcurrencyHelpers

/// Commands passed / tried per client and twin, printed at the end of a run for BENCHMARKS.md's
/// fidelity table (each failed command also fails its test through #expect).
final class FidelityScore: Sendable {
    let label: String
    private let counts = NIOLockedValueBox<[String: (passed: Int, tried: Int, failed: [String])]>([:])

    init(_ label: String) { self.label = label }

    /// Records whether `command` of `client` did what a real device would make it do.
    @discardableResult
    func record(_ client: String, _ command: String, _ passed: Bool) -> Bool {
        counts.withLockedValue { counts in
            var entry = counts[client] ?? (0, 0, [])
            entry.tried += 1
            if passed { entry.passed += 1 } else { entry.failed.append(command) }
            counts[client] = entry
        }
        return passed
    }

    var summary: String {
        counts.withLockedValue { counts in
            counts.keys.sorted().map { client in
                let entry = counts[client]!
                let failed = entry.failed.isEmpty ? "" : " (failed: \(entry.failed.joined(separator: ", ")))"
                return "FIDELITY \(label) \(client): \(entry.passed)/\(entry.tried)\(failed)"
            }.joined(separator: "\n")
        }
    }
}
