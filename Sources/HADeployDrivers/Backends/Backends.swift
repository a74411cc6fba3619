import DeployModel
import DeviceSpec
import HADeployCore

/// Every backend hadeploy has, registered once: the planner, the executor, `status` and the plan-file
/// rules reach a backend only through here. The order is the order devices are offered to them.
public struct Backends: BackendCatalog {
    public static let all: [AnyBackend] = [
        AnyBackend(SSHBackend.self),
        AnyBackend(PyMobileDevice3Backend.self),
        AnyBackend(USBBackend.self),
        AnyBackend(DevicectlBackend.self),
        AnyBackend(SimctlBackend.self),
        AnyBackend(RosettaSimBackend.self),
        AnyBackend(MacBackend.self),
    ]

    public init() {}

    /// Every `transport:` word devices.yaml may use: the backends' own.
    public static let vocabulary = TransportVocabulary(all.flatMap(\.words))

    /// What `device`'s `transport:` word means (nil: a word no backend takes).
    public static func word(of device: Device) -> TransportWord? {
        vocabulary.word(device.transport)
    }

    /// The backends that take `device`'s word (on some host).
    static func taking(_ device: Device) -> [AnyBackend] {
        all.filter { backend in backend.words.contains { $0.word == device.transport } }
    }

    /// The twin `--virtual` gives `device`, or nil when it has none (the Mac, simulators).
    public static func twin(for device: Device) -> TwinKind? {
        taking(device).lazy.compactMap(\.twin).first
    }

    /// Whether `device` is reached through a usbmuxd and lockdownd: a usbmuxd lists it, `hadeploy
    /// pair` pairs it.
    public static func throughUsbmuxd(_ device: Device) -> Bool {
        taking(device).contains { $0.throughUsbmuxd }
    }

    /// The rollback `device`'s backend offers, or nil.
    public static func rollback(for device: Device) -> RollbackKind? {
        taking(device).lazy.compactMap(\.rollback).first
    }

    /// The backend a plan names.
    public static func named(_ kind: String) -> AnyBackend? {
        all.first { $0.kind == kind }
    }

    static func backend(of planned: PlannedBackend) throws -> AnyBackend {
        guard let backend = named(planned.kind) else { throw UnknownBackend(kind: planned.kind) }
        return backend
    }

    // MARK: planning

    /// The backend that drives `device` here, and whether this host can. Under `--virtual` a device
    /// without a twin keeps the backend it would have, not available.
    public static func choose(_ device: Device, _ planning: BackendPlanning) -> (AnyBackend, BackendChoice) {
        for backend in all {
            if let choice = backend.choose(device, planning) { return (backend, choice) }
        }
        var real = planning
        real.topology.virtual = nil
        let twins = planning.topology.virtual
        let reason =
            twins?.unavailable[device.id]
            ?? (device.kind == .simulator
                ? "a simulator has no virtual twin (simulators need macOS)"
                : word(of: device)?.thisMac == true
                    ? "the Mac has no virtual twin (the Mac Catalyst app runs on a macOS host)"
                    : "no virtual twin")
        let failed = twins?.failed[device.id]
        for backend in all {
            if var choice = backend.choose(device, real) {
                choice.availability = failed.map { .failedHere(reason: $0) } ?? .notOnThisHost(reason: reason)
                return (backend, choice)
            }
        }
        // Every transport devices.yaml accepts has a backend on some host.
        return (AnyBackend(USBBackend.self), BackendChoice(availability: .notOnThisHost(reason: reason)))
    }

    /// The plan's record of `backend` for `device`.
    public static func planned(
        _ backend: AnyBackend, _ choice: BackendChoice, _ device: Device, _ planning: BackendPlanning,
        udid: String?, host: String?
    ) throws -> PlannedBackend {
        // A twin's address is its own (found over mDNS), never the real device's.
        let address =
            choice.lookup == .network
                && !(choice.usbRoute.map { if case .virtual = $0 { true } else { false } } ?? false)
            ? device.address.flatMap { planning.nonEmpty($0.resolve(planning.variables).value) } : nil
        return PlannedBackend(
            kind: backend.kind, usbRoute: choice.usbRoute, lookup: choice.lookup,
            settings: try backend.settings(device, choice, planning, udid, host), address: address)
    }

    /// The steps the backend's driver runs for `device`, with their deadlines and retries.
    public static func steps(
        _ backend: AnyBackend, _ device: Device, verification: VerificationPlan, verify: Bool,
        screenshots: Bool
    ) -> [PlanStep] {
        let overrides = device.timeouts
        func step(_ id: StepID, retries: Int = 0) -> PlanStep {
            PlanStep(id, deadline: StepDeadlines.deadline(id, overrides: overrides), retries: retries)
        }
        var steps = [step(.connect, retries: backend.connectRetries)]
        if backend.mounts(device) { steps.append(step(.mount, retries: 1)) }
        steps.append(step(.install, retries: 1))
        if verify && verification.loadedEvent && device.launch { steps.append(step(.subscribe)) }
        // `launch: false`: installed (an upgrade keeps the app's data) and left as the device has it.
        guard device.launch else { return steps }
        steps.append(step(.launch, retries: 1))
        if verify { steps.append(PlanStep(.verify, deadline: .seconds(verification.timeout))) }
        steps.append(step(.crashCheck))
        if screenshots && backend.screenshots { steps.append(step(.screenshot)) }
        return steps
    }

    // MARK: reading a plan

    /// The backend as a person reads it (`usb via the local usbmuxd`).
    public static func describe(_ planned: PlannedBackend) -> String {
        guard let backend = named(planned.kind) else { return planned.kind }
        return (try? backend.describe(planned)) ?? planned.kind
    }

    /// What `step` does for `device`, in words.
    public static func summary(of step: StepID, for device: DevicePlan, version: String) -> String {
        guard let backend = named(device.backend.kind),
            let wording = try? backend.wording(device.backend)
        else { return step.rawValue }
        switch step {
        case .connect: return wording.connect ?? "connect over \(describe(device.backend))"
        case .mount: return wording.mount ?? "mount the Developer Disk Image"
        case .install:
            let install = wording.install.replacingOccurrences(of: "{build}", with: version)
            return device.force
                ? install.replacingOccurrences(of: " unless unchanged", with: "")
                    + " (--force: sent even when the device has this exact build)" : install
        case .subscribe: return "subscribe to ha_dashboard_loaded for this deploy"
        case .launch: return wording.launch
        case .verify:
            var evidence = [wording.appLog]
            if device.verification.homeAssistant { evidence.append("its mobile_app entry in Home Assistant") }
            if device.verification.loadedEvent { evidence.append("the ha_dashboard_loaded event") }
            return "wait for the dashboard to load: " + evidence.joined(separator: ", ")
        case .crashCheck: return "check for crash reports newer than the launch"
        case .screenshot: return "take a screenshot for the report"
        }
    }

    /// The app build `device` runs (iOS, or the Mac Catalyst one).
    public static func platform(of device: DevicePlan) -> AppPlatform {
        named(device.backend.kind)?.platform ?? .iOS
    }

    /// Whether `device`'s installs take an unpacked .app bundle.
    public static func takesBundle(_ device: DevicePlan) -> Bool {
        named(device.backend.kind)?.takesBundle ?? false
    }

    /// The secrets `device`'s configuration names (an SSH password).
    static func secrets(_ device: DevicePlan) -> [SecretReference] {
        guard let backend = named(device.backend.kind) else { return [] }
        return (try? backend.secrets(device.backend)) ?? []
    }

    /// `device`'s configuration, when its backend is `B` (nil: another backend).
    public static func configuration<B: Backend>(_ backend: B.Type, of device: DevicePlan) throws
        -> B.Configuration?
    {
        guard device.backend.kind == B.kind else { return nil }
        return try device.backend.settings.decode(B.Configuration.self)
    }

    // MARK: running a plan

    /// The device's driver, from its plan alone.
    static func driver(for plan: DevicePlan, registry: DriverRegistry) throws -> any DeviceDriver {
        guard plan.availability == .available else {
            throw TransportUnavailable(
                device: plan.name, transport: plan.backend.kind, reason: "not available on this host")
        }
        return try backend(of: plan.backend).driver(plan, registry)
    }

    // MARK: plan files

    public func visitSettings(of backend: inout PlannedBackend, _ fields: inout PlanFileFields) {
        guard let type = Self.named(backend.kind) else {
            fields.refuse(
                "", "no backend named '\(backend.kind)' (\(Self.all.map(\.kind).joined(separator: ", ")))")
            return
        }
        type.visit(&backend.settings, &fields)
    }
}

extension DevicePlan {
    /// Every secret this device's plan names (its launch, its backend's login).
    public var secretReferences: [SecretReference] { launch.secrets + Backends.secrets(self) }
}

/// A plan naming a backend this hadeploy does not have.
struct UnknownBackend: Error, CustomStringConvertible {
    var kind: String
    var description: String {
        "no backend named '\(kind)' (\(Backends.all.map(\.kind).joined(separator: ", "))): make the plan again"
    }
}
