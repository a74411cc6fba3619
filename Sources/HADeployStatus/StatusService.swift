import DeployModel
import Foundation
import HADeployCore
import HADeployKit

/// `hadeploy status … [--publish] [--every INTERVAL]`: one status (and publish) per round, and as a
/// service one round per interval until the task is cancelled (SIGINT, SIGTERM).
public struct StatusService: Sendable {
    /// One status's inputs: devices.yaml and `.env` as read for it, and its plan.
    public struct Round: Sendable {
        public var session: StatusSession
        public var plan: StatusPlan
        /// Every device devices.yaml names (a device published before and not in it is removed).
        public var configured: Set<String>

        public init(session: StatusSession, plan: StatusPlan, configured: Set<String>) {
            self.session = session
            self.plan = plan
            self.configured = configured
        }
    }

    public var context: HADeployContext
    public var records: DeployRecords
    /// Nil without --publish.
    public var publishing: StatusPublishing?

    public init(context: HADeployContext, records: DeployRecords, publishing: StatusPublishing?) {
        self.context = context
        self.records = records
        self.publishing = publishing
    }

    /// The round's status, published when publishing (the line saying what was published goes to
    /// stderr; a failed publish is returned). Nil when the task was cancelled while the devices were
    /// asked: what they answered then is not what they are, so nothing is published.
    public func cycle(_ round: Round) async -> (StatusReport, StatusPublishing.Problem?)? {
        let result = await round.session.run(round.plan)
        if Task.isCancelled { return nil }
        guard let publishing else { return (result, nil) }
        // A publish that started finishes (within its own deadlines) even when the service is told
        // to stop meanwhile: cut between a device's discovery configs and its availability, which
        // comes last, Home Assistant showed a device that answered as unavailable.
        let published = await Task { () async -> Result<FleetPublisher.Summary, StatusPublishing.Problem> in
            do throws(StatusPublishing.Problem) {
                return .success(
                    try await publishing.publish(
                        result, plan: round.plan, records: records, configured: round.configured))
            } catch {
                return .failure(error)
            }
        }.value
        switch published {
        case .success(let summary):
            context.message(publishing.line(summary))
            return (result, nil)
        case .failure(let error):
            return (result, error)
        }
    }

    /// A round every `interval`, counted from each one's start, until the task is cancelled. Each
    /// round after the first reads its inputs again with `reread` (nil: the first round's stay, as
    /// for the twins of --virtual); a read that fails is one line on stderr, and the last good one
    /// is used. `show` gets each status; a failed publish is one line, then the next interval.
    public func run(
        first: Round, every interval: Duration, reread: (@Sendable () async throws -> Round)?,
        show: @Sendable (StatusReport) -> Void
    ) async {
        let clock = context.clock
        var current = first
        var rounds = 0
        while !Task.isCancelled {
            let started = clock.instant()
            if rounds > 0, let reread {
                do {
                    current = try await reread()
                } catch {
                    context.message(
                        "error: \(SystemErrorText.message(error)); the devices of the last good read are asked"
                    )
                }
            }
            rounds += 1
            guard let (result, failure) = await cycle(current) else { return }
            show(result)
            if let failure { context.message("error: \(failure.message)") }
            try? await clock.sleep(until: started + interval)
        }
    }
}
