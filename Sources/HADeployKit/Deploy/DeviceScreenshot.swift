import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers

/// The screen of one device now (the Screenshot button of `status --commands`): reached as a deploy
/// reaches it (the plan's usbmuxd routes, its backend's driver), the Developer Disk Image mounted where
/// the screenshot service needs it, nothing installed or launched; each step within the plan's
/// deadline for it.
public enum DeviceScreenshot {
    public static func take(
        _ plan: DeployPlan, device id: String, context: HADeployContext, environment: [String: String]
    ) async throws -> Data {
        guard let device = plan.devices.first(where: { $0.id == id }), device.availability == .available,
            let shot = device.step(.screenshot)
        else { throw NoScreenshot(device: id) }
        let routes = await RunRoutes.open(
            plan.devices.filter { $0.id == id }, login: plan.usbHostLogin, environment: environment,
            stateDirectory: context.url(for: plan.stateDirectory), fileSystem: context.fileSystem
        ) { _ in }
        do {
            if let failure = routes.failure(for: device) { throw failure }
            let driver = try DriverRegistry(
                host: .current, environment: environment, runner: context.runner,
                fileSystem: context.fileSystem,
                clock: context.clock, workingDirectory: context.currentDirectory
            ).driver(for: device)
            func limit(_ step: PlanStep?) -> Duration { step?.deadline.duration(appBytes: 0) ?? .seconds(60) }
            _ = try await withDeadline("connect", limit(device.step(.connect)), clock: context.clock) {
                try await driver.connect()
            }
            if let mount = device.step(.mount) {
                try await withDeadline("mount", limit(mount), clock: context.clock) {
                    try await driver.prepare()
                }
            }
            let png = try await withDeadline("screenshot", limit(shot), clock: context.clock) {
                try await driver.screenshot()
            }
            await routes.close()
            return png
        } catch {
            await routes.close()
            throw error
        }
    }

    /// A device this host cannot take a screenshot of (not available here, or its backend takes none).
    public struct NoScreenshot: Error, CustomStringConvertible {
        public var device: String
        public var description: String { "\(device) cannot be photographed from this host" }
    }
}
