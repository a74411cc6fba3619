import HADeployCore
import Yams

/// Cross-field rules over a loaded matrix: references resolve, architectures fit flavours, names are
/// unambiguous.
struct SpecValidator {
    let transports: TransportVocabulary

    func validate(_ matrix: DeviceMatrix, groupNodes: Node?, reader: NodeReader) -> [SpecProblem] {
        var problems: [SpecProblem] = []
        let flavourNames = matrix.flavours.map(\.name)
        var seenWords: [String: String] = [:]

        for flavour in matrix.flavours {
            if flavour.sdk == "iphonesimulator" && flavour.archs.contains(.armv7) {
                problems.append(
                    SpecProblem(flavour.location, "flavour '\(flavour.name)': simulators cannot be armv7"))
            }
            if flavour.archs.contains(.armv7) {
                if let target = Double(
                    flavour.deploymentTarget.split(separator: ".").prefix(2).joined(separator: ".")),
                    target >= 11
                {
                    problems.append(
                        SpecProblem(
                            flavour.location,
                            "flavour '\(flavour.name)' builds armv7 but targets iOS \(flavour.deploymentTarget); "
                                + "armv7 needs a deployment target below 11 (and Xcode 13.x)"))
                }
            }
        }

        for device in matrix.devices {
            let context = "device '\(device.id)'"
            // Words the loader took: an unknown one was said there.
            guard let transport = transports.word(device.transport) else { continue }
            if !flavourNames.isEmpty || !device.flavour.isEmpty {
                if let flavour = matrix.flavour(named: device.flavour) {
                    if !flavour.archs.contains(device.arch) {
                        var message =
                            "\(context) is \(device.arch.rawValue) but flavour '\(flavour.name)' builds "
                            + "\(flavour.archs.map(\.rawValue).joined(separator: "+"))"
                        if device.arch == .armv7 {
                            let armv7 = matrix.flavours.filter { $0.archs.contains(.armv7) }.map(\.name)
                            message +=
                                armv7.isEmpty
                                ? "; armv7 needs a legacy flavour (Xcode 13.x, archs [armv7, arm64])"
                                : "; use flavour '\(armv7[0])'"
                        }
                        problems.append(SpecProblem(device.location, message))
                    }
                    let wantsSimulator = device.kind == .simulator
                    if transport.thisMac != flavour.isMacCatalyst {
                        // An iOS .app cannot run on the Mac, nor a Mac Catalyst one on an iPad.
                        problems.append(
                            SpecProblem(
                                device.location,
                                transport.thisMac
                                    ? "\(context) is this Mac (transport \(transport.word)) but flavour '\(flavour.name)' builds "
                                        + "for \(flavour.sdk); use a flavour with `sdk: maccatalyst`"
                                    : "\(context) uses flavour '\(flavour.name)', which builds the Mac Catalyst "
                                        + "app; only a `transport: \(transports.listing(\.thisMac))` device runs it"
                            ))
                    } else if wantsSimulator != (flavour.sdk == "iphonesimulator") {
                        problems.append(
                            SpecProblem(
                                device.location,
                                "\(context) is a \(device.kind.rawValue) but flavour '\(flavour.name)' builds for "
                                    + "\(flavour.sdk)"))
                    }
                } else if !device.flavour.isEmpty {
                    var message = "\(context) uses flavour '\(device.flavour)', which is not defined"
                    if let suggestion = Suggestion.closest(to: device.flavour, in: flavourNames) {
                        message += " (did you mean '\(suggestion)'?)"
                    } else {
                        message += " (flavours: \(flavourNames.joined(separator: ", ")))"
                    }
                    problems.append(SpecProblem(device.location, message))
                }
            }
            if transport.drives != device.kind {
                problems.append(
                    SpecProblem(
                        device.location,
                        "\(context) is a \(device.kind.rawValue) but transport '\(device.transport.rawValue)' "
                            + "drives \(transport.drives.rawValue)s"))
            }
            let fallbackWord = device.fallbackTransport.flatMap { transports.word($0) }
            if let fallback = device.fallbackTransport,
                fallbackWord?.drives != device.kind || fallback == device.transport
            {
                problems.append(
                    SpecProblem(
                        device.location,
                        "\(context) fallback_transport '\(fallback.rawValue)' cannot stand in for '\(device.transport.rawValue)'"
                    ))
            }
            if device.host == nil,
                let word = [transport, fallbackWord].first(where: { $0?.needsHost == true }) ?? nil
            {
                problems.append(
                    SpecProblem(
                        device.location, "\(context) uses \(word.word) and needs `host:` (e.g. ${IPAD2_HOST})"
                    ))
            }
            if let oldest = transport.oldestIOS, device.iosMajor > 0 && device.iosMajor < oldest {
                problems.append(
                    SpecProblem(
                        device.location,
                        "\(context): \(transport.word) drives iOS \(oldest) and later; iOS \(device.iosVersion) uses "
                            + "transport \(transport.olderIOSWord?.rawValue ?? "usb")"))
            }
            for word in [device.id] + device.aliases {
                let normalized = TargetResolver.normalize(word)
                if normalized == "all" || SpecLoader.reservedWords.contains(normalized) {
                    problems.append(
                        SpecProblem(
                            device.location,
                            "\(context): '\(word)' is a hadeploy command word and cannot name a device"))
                } else if let other = seenWords[normalized], other != device.id {
                    problems.append(
                        SpecProblem(
                            device.location, "\(context): name '\(word)' is already used by device '\(other)'"
                        ))
                } else {
                    seenWords[normalized] = device.id
                }
            }
        }

        let deviceIDs = matrix.devices.map(\.id)
        if case .mapping(let mapping) = groupNodes {
            for (key, value) in mapping {
                let name = key.string ?? ""
                // Compared as typed targets are: a group `Sim` would hide behind the alias `sim`.
                let word = TargetResolver.normalize(name)
                if SpecLoader.reservedWords.contains(word) || seenWords[word] != nil {
                    problems.append(
                        SpecProblem(
                            reader.location(key), "group '\(name)' has the name of a device or command"))
                }
                let items: [Node] = {
                    if case .sequence(let sequence) = value { return Array(sequence) }
                    return [value]
                }()
                for item in items {
                    guard let member = item.string, !deviceIDs.contains(member) else { continue }
                    var message = "group '\(name)' lists '\(member)', which is not a device"
                    if let suggestion = Suggestion.closest(to: member, in: deviceIDs) {
                        message += " (did you mean '\(suggestion)'?)"
                    }
                    problems.append(SpecProblem(reader.location(item), message))
                }
            }
        }
        return problems
    }
}
