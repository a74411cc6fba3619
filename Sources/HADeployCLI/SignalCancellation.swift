import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns SIGINT/SIGTERM into cancellation of a task, so a deploy stops cleanly (locks released,
/// partial report written) instead of dying mid-upload. A second Ctrl-C exits at once.
final class SignalCancellation: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []
    private let lock = NSLock()
    private var count = 0
    private var first: Int32?

    /// The first SIGINT or SIGTERM received, if any: the run's exit status says which (130, 143).
    var received: Int32? { lock.withLock { first } }

    init(onSignal: @escaping @Sendable () -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let seen = self.lock.withLock {
                    self.count += 1
                    if self.first == nil { self.first = number }
                    return self.count
                }
                if seen > 1 { exit(128 + number) }
                FileHandle.standardError.write(
                    Data("\ninterrupted: stopping cleanly (press Ctrl-C again to quit at once)\n".utf8))
                onSignal()
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
