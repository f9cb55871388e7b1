/// The line settings of a serial port: speed, frame (data bits, parity, stop bits) and flow control.
///
/// Written compactly as `BAUD,FRAME,flow=FLOW`, e.g. `115200,8N1`, `4800`, `9600,7E2,flow=rtscts`
/// (see ``init(parsing:)``); ``description`` gives that form back. Pseudo-terminals accept every
/// standard speed and frame, but carry bytes, not bits: Linux keeps them at 8 data bits and no
/// parity whatever is asked, and the values only matter to a real UART.
public struct SerialSettings: Sendable, Hashable, CustomStringConvertible {
    /// The parity bit of each character.
    public enum Parity: String, Sendable, Hashable, CaseIterable {
        case none, odd, even, mark, space

        /// The letter of the compact frame (`8N1`): N, O, E, M or S.
        public var letter: Character {
            switch self {
            case .none: "N"
            case .odd: "O"
            case .even: "E"
            case .mark: "M"
            case .space: "S"
            }
        }
    }

    /// How the two ends pace each other.
    public enum FlowControl: String, Sendable, Hashable, CaseIterable {
        /// No flow control (the usual setting for sensors).
        case none
        /// Software flow control: XON/XOFF characters in the byte stream (`flow=xonxoff`).
        case xonXoff = "xonxoff"
        /// Hardware flow control on the RTS/CTS lines (`flow=rtscts`).
        case rtsCts = "rtscts"
        /// Hardware flow control on the DTR/DSR lines (`flow=dtrdsr`; Linux serial drivers do not
        /// offer it, so opening with it reports an unsupported setting).
        case dtrDsr = "dtrdsr"
    }

    /// The speed in bits per second (1 … 4,000,000).
    public var baudRate: Int
    /// Data bits per character: 5, 6, 7 or 8.
    public var dataBits: Int
    /// The parity bit.
    public var parity: Parity
    /// Stop bits: 1 or 2.
    public var stopBits: Int
    /// Flow control.
    public var flowControl: FlowControl
    /// Whether a port that keeps a speed of its own whatever is asked is opened at that speed
    /// instead of being refused (the frame and flow control are still checked).
    ///
    /// For devices with no bit rate of their own: an ANT USB2 or USB-m stick (0fcf:1008, 0fcf:1009)
    /// is served on Linux by the `usb_serial_simple` driver, which answers modem-line queries with
    /// ENOTTY and keeps 9600 bit/s whatever is set, yet carries the stick's bytes at USB speed.
    /// Not part of the compact form (``init(parsing:)``, ``description``); `SensorRecorder.Sensor`
    /// sets it for `ant` ports. False by default.
    public var acceptsFixedSpeed = false

    /// 115200 bit/s, 8 data bits, no parity, 1 stop bit, no flow control (`115200,8N1`).
    public static let standard = SerialSettings(uncheckedBaudRate: 115_200)

    /// The accepted speeds in bits per second.
    public static let baudRates: ClosedRange<Int> = 1...4_000_000

    /// Settings with the given values; throws `SensorError.invalidSettings` for a value out of range.
    public init(
        baudRate: Int = 115_200, dataBits: Int = 8, parity: Parity = .none, stopBits: Int = 1,
        flowControl: FlowControl = .none
    ) throws(SensorError) {
        self.init(
            uncheckedBaudRate: baudRate, dataBits: dataBits, parity: parity, stopBits: stopBits,
            flowControl: flowControl)
        if let problem = problem {
            throw .invalidSettings(spec: description, detail: problem)
        }
    }

    /// Settings with the given values, unchecked (values read back from a driver).
    init(
        uncheckedBaudRate baudRate: Int, dataBits: Int = 8, parity: Parity = .none, stopBits: Int = 1,
        flowControl: FlowControl = .none
    ) {
        self.baudRate = baudRate
        self.dataBits = dataBits
        self.parity = parity
        self.stopBits = stopBits
        self.flowControl = flowControl
    }

    /// Parses the compact form: comma-separated parts, each at most once, in any order, any part
    /// left out keeping its value from ``standard``:
    ///
    /// - a speed in bits per second: `115200`;
    /// - a frame: data bits (5–8), parity letter (`N` none, `O` odd, `E` even, `M` mark, `S`
    ///   space, either case), stop bits (1 or 2): `8N1`, `7E2`;
    /// - `flow=none`, `flow=xonxoff`, `flow=rtscts` or `flow=dtrdsr`.
    ///
    /// `""` is ``standard``; `"4800"` is `4800,8N1`; `"flow=rtscts"` is `115200,8N1,flow=rtscts`.
    /// Spaces around parts are ignored. Anything else throws `SensorError.invalidSettings` naming
    /// the part.
    public init(parsing spec: String) throws(SensorError) {
        var settings = SerialSettings.standard
        var seen: Set<String> = []
        func fail(_ detail: String) -> SensorError { .invalidSettings(spec: spec, detail: detail) }
        let parts = spec.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmed() }
        if parts != [""] {
            for part in parts {
                guard !part.isEmpty else { throw fail("an empty part") }
                let kind: String
                if part.lowercased().hasPrefix("flow=") {
                    kind = "flow control"
                    let value = part.dropFirst("flow=".count).lowercased()
                    guard let flow = FlowControl(rawValue: value) else {
                        throw fail("unknown flow control '\(value)' (none, xonxoff, rtscts or dtrdsr)")
                    }
                    settings.flowControl = flow
                } else if part.allSatisfy(\.isASCIIDigit) {
                    kind = "speed"
                    guard let rate = Int(part), SerialSettings.baudRates.contains(rate) else {
                        throw fail("speed \(part) is outside 1…4000000 bit/s")
                    }
                    settings.baudRate = rate
                } else if let frame = SerialSettings.frame(part) {
                    kind = "frame"
                    guard (5...8).contains(frame.dataBits) else {
                        throw fail("\(frame.dataBits) data bits in '\(part)' (5, 6, 7 or 8)")
                    }
                    guard (1...2).contains(frame.stopBits) else {
                        throw fail("\(frame.stopBits) stop bits in '\(part)' (1 or 2)")
                    }
                    (settings.dataBits, settings.parity, settings.stopBits) =
                        (frame.dataBits, frame.parity, frame.stopBits)
                } else {
                    throw fail("'\(part)' is not a speed (115200), a frame (8N1) or flow=…")
                }
                guard seen.insert(kind).inserted else { throw fail("the \(kind) is given twice") }
            }
        }
        self = settings
    }

    /// Whether the compact form `spec` gives a speed (a part of digits only): `"4800"` and
    /// `"9600,8N1"` do, `""` and `"8N1,flow=rtscts"` do not (a speed left out may be hunted).
    public static func specifiesSpeed(_ spec: String) -> Bool {
        spec.split(separator: ",").contains { part in
            let trimmed = part.trimmed()
            return !trimmed.isEmpty && trimmed.allSatisfy(\.isASCIIDigit)
        }
    }

    /// A frame part: one digit, a parity letter, one digit.
    private static func frame(_ part: String) -> (dataBits: Int, parity: Parity, stopBits: Int)? {
        let characters = Array(part)
        guard characters.count == 3, let dataBits = characters[0].wholeNumberValue,
            let stopBits = characters[2].wholeNumberValue,
            let parity = Parity.allCases.first(where: { $0.letter == Character(characters[1].uppercased()) })
        else { return nil }
        return (dataBits, parity, stopBits)
    }

    /// What is wrong with the values, if anything.
    private var problem: String? {
        if !SerialSettings.baudRates.contains(baudRate) { return "speed \(baudRate) is outside 1…4000000 bit/s" }
        if !(5...8).contains(dataBits) { return "\(dataBits) data bits (5, 6, 7 or 8)" }
        if !(1...2).contains(stopBits) { return "\(stopBits) stop bits (1 or 2)" }
        return nil
    }

    /// The frame in compact form: `8N1`.
    public var frame: String { "\(dataBits)\(parity.letter)\(stopBits)" }

    /// The compact form: `115200,8N1`, with `,flow=…` unless flow control is none.
    public var description: String {
        "\(baudRate),\(frame)" + (flowControl == .none ? "" : ",flow=\(flowControl.rawValue)")
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmed() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
