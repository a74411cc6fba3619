import Foundation
import HADeployCore
import TestSupport
import Testing

/// The clock's deadline: a body's answer, or nil once the limit has passed (the body cancelled).
@Suite struct WallClockTests {
    let clock = TestHost.clock

    @Test func anAnswerInTimeIsReturnedAndANilAnswerIsNotATimeout() async throws {
        #expect(try await clock.withDeadline(.seconds(30)) { 42 } == 42)
        let nothing: Int?? = try await clock.withDeadline(.seconds(30)) { Int?.none }
        #expect(nothing == .some(nil))
    }

    @Test func aBodyPastTheLimitIsCancelledAndTheAnswerIsNil() async throws {
        let started = clock.instant()
        let answer = try await clock.withDeadline(.milliseconds(100)) { () -> Bool in
            try await clock.sleep(for: .seconds(60))
            return true
        }
        #expect(answer == nil)
        // The body stopped when cancelled: far less than its 60 s (a loaded machine schedules late).
        #expect(clock.elapsed(since: started) < .seconds(30))
    }

    @Test func theBodysErrorIsThrown() async {
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await clock.withDeadline(.seconds(30)) { () -> Int in throw Refused() }
        }
    }

    @Test func theLiveClocksInstantOnlyMovesForward() async throws {
        let first = clock.instant()
        try await clock.sleep(for: .milliseconds(20))
        #expect(clock.elapsed(since: first) >= .milliseconds(20))
        #expect(clock.remaining(until: first) == .zero)
    }
}
