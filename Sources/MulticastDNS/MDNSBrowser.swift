import Foundation

/// One instance of a DNS-SD service found on the local network.
public struct MDNSService: Sendable, Equatable, Hashable {
    /// The instance's own label: for `_apple-mobdev2._tcp`, `<Wi-Fi MAC>@<IPv6 link-local address>`.
    public var instance: String
    /// The service type with its domain (`_apple-mobdev2._tcp.local`).
    public var service: String
    /// The host name the SRV record names (`iPad.local`), and its port there.
    public var host: String?
    public var port: UInt16?
    /// The IPv4 addresses (then IPv6) the A and AAAA records give for `host`.
    public var addresses: [String]
    public var txt: [String]

    public init(
        instance: String, service: String, host: String? = nil, port: UInt16? = nil, addresses: [String] = [],
        txt: [String] = []
    ) {
        self.instance = instance
        self.service = service
        self.host = host
        self.port = port
        self.addresses = addresses
        self.txt = txt
    }

    /// For `_apple-mobdev2._tcp`: the Wi-Fi MAC address the instance name starts with, lowercased
    /// (what a pair record keeps as `WiFiMACAddress`).
    public var wifiMACAddress: String? {
        guard let at = instance.firstIndex(of: "@") else { return nil }
        let mac = instance[..<at].lowercased()
        return mac.split(separator: ":").count == 6 ? mac : nil
    }
}

/// Browses for a DNS-SD service with one-shot multicast DNS queries (RFC 6762 §5.1): each query is
/// sent from a private port through every multicast interface of this host (the loopback included),
/// and the responders answer that port directly. Nothing is bound to 5353 and nothing is left running:
/// no Avahi, no mDNSResponder and no root are needed.
public enum MDNSBrowser {
    /// iOS devices announce themselves for Wi-Fi sync as this service (the name Apple's usbmuxd,
    /// netmuxd and pymobiledevice3 browse).
    public static let mobileDeviceService = "_apple-mobdev2._tcp.local"

    /// The instances of `service` that answer within `window`, with their hosts, ports and addresses.
    /// Asks again every half second (a datagram can be lost); returns early once every instance that
    /// answered has an address and `enough` of them have.
    public static func browse(
        _ service: String = mobileDeviceService, within window: Duration, interfaces: [String]? = nil,
        enough: Int = .max
    ) throws -> [MDNSService] {
        let socket = try MulticastSocket(port: 0)
        let interfaces = interfaces ?? PlatformCalls.multicastInterfaces()
        let id = UInt16.random(in: 1...UInt16.max)
        let query = DNSMessage(id: id, questions: [.init(name: service, type: .ptr)]).encoded()
        var collector = Collector(service: service)
        let start = ContinuousClock.now
        let end = start + window
        var nextQuery = start
        while true {
            let now = ContinuousClock.now
            if now >= end { break }
            if now >= nextQuery {
                for interface in interfaces { socket.sendToGroup(query, via: interface) }
                // Follow-up questions for instances that answered without their SRV or address.
                let followUps = collector.missingQuestions()
                if !followUps.isEmpty {
                    let message = DNSMessage(id: id, questions: followUps).encoded()
                    for interface in interfaces { socket.sendToGroup(message, via: interface) }
                }
                nextQuery = now + .milliseconds(500)
            }
            let wait = min(end, nextQuery) - now
            let milliseconds = Int(
                wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)
            guard let (data, _) = socket.receive(within: max(1, milliseconds)),
                let message = try? DNSMessage(decoding: data), message.isResponse
            else { continue }
            collector.add(message)
            let complete = collector.services.filter { !$0.addresses.isEmpty }
            if complete.count >= enough, complete.count == collector.services.count { break }
        }
        return collector.services
    }

    /// Gathers what answers say about `service`'s instances, whichever section holds each record.
    struct Collector {
        let service: String
        var instances: [String] = []
        var srv: [String: (host: String, port: UInt16)] = [:]
        var txt: [String: [String]] = [:]
        var addresses: [String: [String]] = [:]

        init(service: String) { self.service = service }

        mutating func add(_ message: DNSMessage) {
            for record in message.answers + message.additionals {
                let name = record.name.lowercased()
                switch record.data {
                case .ptr(let target) where name == service.lowercased():
                    if record.ttl > 0, !instances.contains(target) { instances.append(target) }
                    if record.ttl == 0 { instances.removeAll { $0 == target } }
                case .srv(_, _, let port, let target):
                    srv[name] = (target, port)
                case .txt(let strings):
                    txt[name] = strings
                case .a(let address):
                    if !(addresses[name] ?? []).contains(address) {
                        addresses[name, default: []].insert(address, at: 0)
                    }
                case .aaaa(let address):
                    if !(addresses[name] ?? []).contains(address) {
                        addresses[name, default: []].append(address)
                    }
                default: break
                }
            }
        }

        var services: [MDNSService] {
            instances.map { full in
                let key = full.lowercased()
                let label = full.hasSuffix("." + service) ? String(full.dropLast(service.count + 1)) : full
                let host = srv[key]?.host
                return MDNSService(
                    instance: label, service: service, host: host, port: srv[key]?.port,
                    addresses: host.map { addresses[$0.lowercased()] ?? [] } ?? [], txt: txt[key] ?? [])
            }
        }

        func missingQuestions() -> [DNSMessage.Question] {
            var questions: [DNSMessage.Question] = []
            for full in instances {
                guard let host = srv[full.lowercased()]?.host else {
                    questions.append(.init(name: full, type: .srv))
                    continue
                }
                if (addresses[host.lowercased()] ?? []).isEmpty {
                    questions.append(.init(name: host, type: .a))
                }
            }
            return questions
        }
    }
}
