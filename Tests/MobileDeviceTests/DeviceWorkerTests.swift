import Foundation
import Testing

@testable import MobileDevice

@Suite struct DeviceWorkerTests {
    let identity = DeviceIdentity(name: "iPad 2", udid: "0123456789abcdef0123456789abcdef01234567")

    @Test func resultComesBackFromTheWorkerThread() async throws {
        let worker = DeviceWorker(label: "test", device: identity)
        let value = try await worker.run("compute", within: .seconds(5)) { 6 * 7 }
        #expect(value == 42)
    }

    @Test func aBlockedCallIsAbandonedAtItsDeadlineWithTheStepNamed() async throws {
        let worker = DeviceWorker(label: "test", device: identity)
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) {
            try await worker.run("afc_file_write PublicStaging/app", within: .milliseconds(200)) {
                Thread.sleep(forTimeInterval: 10)  // an uninterruptible C call
            }
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.step == "afc_file_write PublicStaging/app")
        #expect(error?.description.contains("iPad 2 (UDID 0123456789abcdef0123456789abcdef01234567)") == true)
        // The worker's handles are still busy: it refuses more work instead of queueing behind it.
        let next = await #expect(throws: MobileDeviceError.self) {
            try await worker.run("afc_file_close", within: .seconds(5)) { 1 }
        }
        #expect(next?.kind == .connectionLost)
        #expect(next?.reason.contains("afc_file_write PublicStaging/app") == true)
    }

    @Test func cancellationReturnsPromptly() async throws {
        let worker = DeviceWorker(label: "test", device: identity)
        let task = Task {
            try await worker.run("screenshotr_take_screenshot", within: .seconds(30)) {
                Thread.sleep(forTimeInterval: 10)
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - started < .seconds(5))
        guard case .failure(let error as MobileDeviceError) = result else {
            Issue.record("expected a cancellation error, got \(result)")
            return
        }
        #expect(error.kind == .cancelled)
    }

    @Test func callsOnOneWorkerNeverOverlap() async throws {
        let worker = DeviceWorker(label: "test", device: identity)
        let counter = OverlapCounter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await worker.run("step", within: .seconds(10)) {
                        counter.enter()
                        Thread.sleep(forTimeInterval: 0.01)
                        counter.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(counter.maximum == 1)
    }
}

final class OverlapCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    private(set) var maximum = 0

    func enter() {
        lock.withLock {
            current += 1
            maximum = max(maximum, current)
        }
    }

    func leave() { lock.withLock { current -= 1 } }
}
