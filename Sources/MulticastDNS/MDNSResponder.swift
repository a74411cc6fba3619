import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Answers multicast DNS for a set of DNS-SD instances, the way an iOS device announces itself for
/// Wi-Fi sync: a PTR for the service, the instance's SRV and TXT, the host's A record (RFC 6762,
/// RFC 6763). Announces each instance when it is added, says goodbye (TTL 0) when it is removed,
/// and answers queries: multicast ones on the group, one-shot ones (from a port other than 5353)
/// straight to the asker with its query ID, as §6.7 asks.
///
/// The virtual devices use it; it binds 5353 shared with the host's other responders.
public final class MDNSResponder: @unchecked Sendable {
    public struct Instance: Sendable, Equatable {
        public var name: String
        public var service: String
        public var host: String
        public var port: UInt16
        public var address: String
        public var txt: [String]

        public init(
            name: String, service: String, host: String, port: UInt16, address: String, txt: [String] = []
        ) {
            self.name = name
            self.service = service
            self.host = host
            self.port = port
            self.address = address
            self.txt = txt
        }

        var fullName: String { "\(name).\(service)" }
    }

    private let socket: MulticastSocket
    private let interfaces: [String]
    private let lock = NSLock()
    private var instances: [Instance] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    /// Every multicast interface of this host and the loopback: a browser that asks through its
    /// default interface (pymobiledevice3) and one that asks through each (hadeploy) both hear it.
    public static var defaultInterfaces: [String] { PlatformCalls.multicastInterfaces() }

    /// Answers on `interfaces` (IPv4 addresses of this host).
    public init(interfaces: [String]) throws {
        socket = try MulticastSocket(port: MulticastSocket.port)
        self.interfaces = interfaces
        for interface in interfaces { socket.join(on: interface) }
        let thread = Thread { [self] in serve() }
        thread.name = "mDNS responder"
        thread.start()
    }

    /// Adds (or replaces, by name) an instance and announces it twice, a second apart (§8.3).
    public func add(_ instance: Instance) {
        lock.withLock {
            instances.removeAll { $0.name == instance.name && $0.service == instance.service }
            instances.append(instance)
        }
        announce([instance], ttl: 120)
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [weak self] in
            guard let self, self.lock.withLock({ self.instances.contains(instance) && !self.stopped }) else {
                return
            }
            self.announce([instance], ttl: 120)
        }
    }

    /// Removes an instance and says goodbye for it (its records with TTL 0).
    public func remove(name: String) {
        let gone = lock.withLock {
            let gone = instances.filter { $0.name == name }
            instances.removeAll { $0.name == name }
            return gone
        }
        if !gone.isEmpty { announce(gone, ttl: 0) }
    }

    /// Says goodbye for every instance and stops answering.
    public func stop() {
        let all = lock.withLock {
            guard !stopped else { return [Instance]() }
            stopped = true
            return instances
        }
        if !all.isEmpty { announce(all, ttl: 0) }
        done.wait()
    }

    private func announce(_ announced: [Instance], ttl: UInt32) {
        var message = DNSMessage(flags: 0x8400)
        for instance in announced { message.answers += records(for: instance, ttl: ttl) }
        let data = message.encoded()
        for interface in interfaces { socket.sendToGroup(data, via: interface) }
    }

    private func records(for instance: Instance, ttl: UInt32) -> [DNSMessage.Record] {
        [
            .init(name: instance.service, data: .ptr(instance.fullName), ttl: ttl == 0 ? 0 : 4500),
            .init(
                name: instance.fullName,
                data: .srv(priority: 0, weight: 0, port: instance.port, target: instance.host),
                ttl: ttl, cacheFlush: true),
            .init(
                name: instance.fullName, data: .txt(instance.txt), ttl: ttl == 0 ? 0 : 4500, cacheFlush: true),
            .init(name: instance.host, data: .a(instance.address), ttl: ttl, cacheFlush: true),
        ]
    }

    private func serve() {
        defer { done.signal() }
        while !lock.withLock({ stopped }) {
            guard let (data, source) = socket.receive(within: 200),
                let query = try? DNSMessage(decoding: data), !query.isResponse
            else { continue }
            let current = lock.withLock { instances }
            var answers: [DNSMessage.Record] = []
            var additionals: [DNSMessage.Record] = []
            for question in query.questions {
                let name = question.name.lowercased()
                let type = DNSMessage.RecordType(rawValue: question.type)
                for instance in current {
                    let all = records(for: instance, ttl: 120)
                    if name == instance.service.lowercased() && (type == .ptr || type == .any) {
                        answers.append(all[0])
                        additionals += all[1...]
                    } else if name == instance.fullName.lowercased() {
                        answers += all[1...2].filter { type == .any || $0.data.type == question.type }
                        additionals.append(all[3])
                    } else if name == instance.host.lowercased() && (type == .a || type == .any) {
                        answers.append(all[3])
                    }
                }
            }
            guard !answers.isEmpty else { continue }
            let oneShot = UInt16(bigEndian: source.sin_port) != MulticastSocket.port
            var reply = DNSMessage(flags: 0x8400, answers: answers, additionals: additionals)
            if oneShot {
                // A legacy unicast answer: the asker's ID and questions back, straight to its port.
                reply.id = query.id
                reply.questions = query.questions
                socket.send(reply.encoded(), to: source)
            } else {
                for interface in interfaces { socket.sendToGroup(reply.encoded(), via: interface) }
            }
        }
    }
}
