import DeployModel
import Foundation
import HADeployCore
import MQTT

/// Commands from Home Assistant to the devices this service drives (`status --every … --publish
/// --commands`): each device's Relaunch, Redeploy, Refresh and Screenshot buttons and its update
/// entity's Install.
///
/// Safe by construction: only a live message acts (a retained one, which the broker would hand every
/// new subscriber again, never does); only these four names, with the payload Home Assistant sends
/// (`PRESS`, `install`), and nothing of the message is passed on (no argument, no path); only a device
/// of this service's own plan that is available here (another host's device is that host's); one
/// action at a time per device (a second one says in Home Assistant that it was not started), and the
/// deploy's own lock keeps a CLI deploy and a command apart.
public struct FleetCommands: Sendable {
    public enum Command: String, Sendable, CaseIterable {
        /// Launch the installed app with the device's configured settings, and verify; no install.
        case relaunch
        /// Install the configured build again (forced), launch, verify.
        case redeploy
        /// The device's status now (and published).
        case refresh
        /// The screen now, as the device's screenshot (nothing installed or launched).
        case screenshot
        /// The update entity's Install: the deploy of the configured build (install, launch, verify).
        case install

        /// What Home Assistant sends for it (a button's `payload_press`, the update's `payload_install`).
        var payload: [UInt8] { Array((self == .install ? "install" : "PRESS").utf8) }
    }

    /// Runs `command` (not `refresh`) on the device `id`: the line its Last command sensor shows.
    public var act: @Sendable (_ command: Command, _ id: String) async -> String

    public init(act: @escaping @Sendable (_ command: Command, _ id: String) async -> String) {
        self.act = act
    }
}

/// What one command message asks, once checked (`FleetCommandRequest.read`).
struct FleetCommandRequest: Sendable, Equatable {
    var device: String
    var node: String
    var command: FleetCommands.Command

    /// Why a message does nothing, in a line for the service's log.
    enum Ignored: Error, Equatable {
        case notACommand
        case notOurs
        case retained(device: String, key: String)
        case unknown(device: String, key: String)
        /// An empty message: a retained command being cleared, nothing asked.
        case cleared
    }

    /// The request a message makes of `plan`'s devices, or why it makes none.
    static func read(_ message: MQTTMessage, topics: FleetTopics, plan: StatusPlan) -> Result<Self, Ignored> {
        guard let (node, key) = topics.command(in: message.topic) else { return .failure(.notACommand) }
        guard
            let planned = plan.devices.first(where: {
                FleetDiscovery.node(udid: $0.device.udid?.value, id: $0.device.id) == node
            }), planned.device.availability == .available
        else { return .failure(.notOurs) }
        let id = planned.device.id
        if message.retain { return .failure(.retained(device: id, key: key)) }
        if message.payload.isEmpty { return .failure(.cleared) }
        guard let command = FleetCommands.Command(rawValue: key), message.payload == command.payload else {
            return .failure(.unknown(device: id, key: key))
        }
        return .success(FleetCommandRequest(device: id, node: node, command: command))
    }
}

/// The devices acting now, and what each one does: one action at a time per device.
actor FleetActions {
    private var running: [String: FleetCommands.Command] = [:]
    private var tasks: [Task<Void, Never>] = []

    /// Starts `body` for `device` unless it already acts (what it is doing then); `then` runs once
    /// the device is free again (the status published after it).
    func start(
        _ device: String, _ command: FleetCommands.Command, _ body: @escaping @Sendable () async -> Void,
        then: @escaping @Sendable () async -> Void = {}
    ) -> FleetCommands.Command? {
        if let busy = running[device] { return busy }
        running[device] = command
        tasks.append(
            Task {
                await body()
                self.finish(device)
                await then()
            })
        return nil
    }

    private func finish(_ device: String) { running[device] = nil }

    /// Waits for every action started: a command taken is done before the service ends.
    func drain() async {
        while !tasks.isEmpty {
            let waiting = tasks
            tasks = []
            for task in waiting { await task.value }
        }
    }
}

/// Which hosts' services claim each device (`<prefix>/<node>/host`, retained): each service that takes
/// commands claims the devices it drives, and a device claimed by two is said (both would act on its
/// commands), once per other host.
actor FleetClaims {
    /// This service: the host's name and the checkout it runs in.
    let me: String
    private var claimants: [String: Set<String>] = [:]
    private var said: Set<String> = []

    init(me: String) { self.me = me }

    /// A claim seen on the broker (an empty one: a service that stopped took its claim back).
    func saw(node: String, host: String) {
        // Anyone who may publish on the broker writes these: bounded before they are kept or said.
        let host = String(host.prefix(200))
        if host.isEmpty { claimants[node] = nil } else { claimants[node, default: []].insert(host) }
    }

    /// The other hosts that claim `node`, each only the first time.
    func others(of node: String) -> [String] {
        (claimants[node] ?? []).subtracting([me]).sorted().filter { said.insert("\(node) \($0)").inserted }
    }

    /// The nodes only this service claims: taken back when it stops.
    var solelyMine: [String] { claimants.filter { $0.value == [me] }.keys.sorted() }
}
