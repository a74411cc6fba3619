import Foundation
import NIOConcurrencyHelpers

/// A token bucket shared by every connection of one device, emulating the USB link speed.
///
/// USB 2.0 moves about 35 MB/s in practice (PEERS.md, go-ios#400); the `throttle` fault sets the
/// rate. Readers call `consume` after taking bytes, which delays them and, through the stream's
/// backpressure, the client's sends.
final class LinkThrottle: Sendable {
    let bytesPerSecond: Int
    private let nextFree: NIOLockedValueBox<UInt64>

    init(bytesPerSecond: Int) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.nextFree = NIOLockedValueBox(DispatchTime.now().uptimeNanoseconds)
    }

    /// Waits until `bytes` may pass at the configured rate.
    func consume(bytes: Int) async {
        guard bytes > 0 else { return }
        let cost = UInt64(Double(bytes) / Double(bytesPerSecond) * 1_000_000_000)
        let now = DispatchTime.now().uptimeNanoseconds
        let readyAt: UInt64 = nextFree.withLockedValue { next in
            let start = max(next, now)
            next = start + cost
            return start + cost
        }
        if readyAt > now {
            try? await Task.sleep(nanoseconds: readyAt - now)
        }
    }
}
