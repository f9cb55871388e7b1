import Foundation

/// The speeds found on serial devices, remembered across runs in a small JSON file, so that the
/// next hunt (``NMEASpeedHunt``) tries the device's speed first.
///
/// A device is remembered by its `/dev/serial/by-id/…` link when it has one (the name survives a
/// replug and a renumbering: `/dev/ttyUSB0` may become `/dev/ttyUSB1`), else by its path as given
/// (see ``deviceName(for:)``). The file (``defaultFile(environment:)``) holds at most
/// ``capacity`` devices, the most recently found kept:
///
/// ```json
/// {"devices":[{"device":"/dev/serial/by-id/usb-u-blox_GNSS_receiver-if00","speed":9600,"found":"2026-11-26T02:00:00Z"}],"version":1}
/// ```
///
/// A missing or unreadable file is an empty memory; writing fails with ``Failure``, which never
/// stops a recording (the speed is simply hunted again next time).
public struct SerialSpeedMemory: Sendable, Hashable {
    /// Why the memory could not be written.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var file: String
        public var detail: String

        public var description: String {
            "cannot remember the speed in \(file) (\(detail)): the speed will be hunted again next time; "
                + "check that the folder is writable or set $XDG_STATE_HOME"
        }
    }

    /// The most devices the file keeps.
    public static let capacity = 64

    /// The file's path.
    public let file: String

    /// A memory kept in `file` (created on the first ``remember(_:for:at:)``).
    public init(file: String) {
        self.file = file
    }

    /// `$XDG_STATE_HOME/workout-engine/serial-speeds.json` when `XDG_STATE_HOME` is an absolute
    /// path, else `~/.local/state/workout-engine/serial-speeds.json`.
    public static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = state
        } else {
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
            base = home + "/.local/state"
        }
        return base + "/workout-engine/serial-speeds.json"
    }

    /// The name `path` is remembered by: the `/dev/serial/by-id/` link that leads to the same
    /// device when there is one (the path itself when it is such a link), else `path` as given.
    public static func deviceName(for path: String, byIDFolder: String = "/dev/serial/by-id") -> String {
        if path.hasPrefix(byIDFolder + "/") { return path }
        guard let target = resolvedPath(path),
            let names = try? FileManager.default.contentsOfDirectory(atPath: byIDFolder)
        else { return path }
        for name in names.sorted() where resolvedPath("\(byIDFolder)/\(name)") == target {
            return "\(byIDFolder)/\(name)"
        }
        return path
    }

    /// The speed remembered for `device` (a name from ``deviceName(for:)``), if any.
    public func speed(for device: String) -> Int? {
        entries().first { $0.device == device }?.speed
    }

    /// Remembers `speed` for `device`; the oldest devices beyond ``capacity`` are forgotten.
    /// The file is replaced atomically (written beside it, then renamed), created with its folder.
    public func remember(_ speed: Int, for device: String, at date: Date = Date()) throws(Failure) {
        var list = entries().filter { $0.device != device }
        list.insert(Entry(device: device, speed: speed, found: date), at: 0)
        list.sort { $0.found > $1.found }
        let stored = Stored(version: 1, devices: Array(list.prefix(Self.capacity)))
        do {
            let folder = (file as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(stored).write(to: URL(fileURLWithPath: file), options: .atomic)
        } catch {
            throw Failure(file: file, detail: error.localizedDescription)
        }
    }

    private struct Entry: Codable, Hashable {
        var device: String
        var speed: Int
        var found: Date
    }

    private struct Stored: Codable {
        var version: Int
        var devices: [Entry]
    }

    private func entries() -> [Entry] {
        guard let data = FileManager.default.contents(atPath: file) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (try? decoder.decode(Stored.self, from: data))?.devices.filter { SerialSettings.baudRates.contains($0.speed) }
            ?? []
    }
}
