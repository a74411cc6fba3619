import Dispatch

/// Runs blocking work (unzip, image encoding, RSA key generation) on a GCD thread.
///
/// The Swift concurrency pool has one thread per core (two on the CI machine); blocking it for a
/// second would stall every other connection of every virtual device, and the clients give up
/// after 5 s on usbmuxd replies (PROTOCOL.md §1.1).
enum Offload {
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
