import Foundation

/// Resumes a continuation exactly once, whichever of the C call, the deadline timer or a
/// cancellation gets there first.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?

    init(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation = continuation
    }

    /// Returns false when someone else already resumed. `first` runs only when this call is the one
    /// that resumes, before the waiting task wakes (what it records is there when the task goes on).
    @discardableResult
    func resume(_ result: Result<T, any Error>, first: () -> Void = {}) -> Bool {
        let taken: CheckedContinuation<T, any Error>? = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        guard let taken else { return false }
        first()
        taken.resume(with: result)
        return true
    }
}
