/// The watch-link protocol, version 1: what a watch detects itself (swim lengths and strokes,
/// buttons) and tunnelled BLE GATT payloads, as checksummed text lines. See docs/watch-link.md.
///
/// A message is `$WL1,<TYPE>,<fields…>*HH` + CR LF, where HH is the XOR of every byte strictly
/// between `$` and `*`, as two upper-case hex digits (the NMEA rule). Times are milliseconds on the
/// watch's clock since the session's start.
public enum WatchLink {
    public static let version = 1

    /// A pool length's kind.
    public enum LengthKind: String, Sendable, Hashable, CaseIterable {
        case active = "A"
        case drill = "D"
        case rest = "R"
    }

    /// Stroke styles.
    public enum Style: String, Sendable, Hashable, CaseIterable {
        case freestyle = "FR"
        case backstroke = "BK"
        case breaststroke = "BR"
        case butterfly = "FL"
        case mixed = "MX"
    }

    /// The watch's buttons.
    public enum Button: String, Sendable, Hashable, CaseIterable {
        case lap = "LAP"
        case next = "NEXT"
        case pause = "PAUSE"
        case resume = "RESUME"
        case stop = "STOP"
    }

    /// `$WL1,` + body + `*HH` CR LF.
    public static func line(_ body: String) -> [UInt8] {
        let text = "WL\(version),\(body)"
        let sum = text.utf8.reduce(UInt8(0), ^)
        let hex = String(sum, radix: 16, uppercase: true)
        return Array("$\(text)*\(hex.count == 1 ? "0" + hex : hex)\r\n".utf8)
    }

    /// `HELLO,<device name>`: the first line after connecting.
    public static func hello(device: String) -> [UInt8] {
        line("HELLO,\(device.replacingOccurrences(of: ",", with: " ").replacingOccurrences(of: "*", with: " "))")
    }

    /// `LEN,<end ms>,<duration ms>,<kind>,<style or ->,<strokes or ->`: one pool length (or rest).
    public static func length(
        endMilliseconds: Int, durationMilliseconds: Int, kind: LengthKind, style: Style?, strokes: Int?
    )
        -> [UInt8]
    {
        line(
            "LEN,\(endMilliseconds),\(durationMilliseconds),\(kind.rawValue),\(style?.rawValue ?? "-"),"
                + "\(strokes.map(String.init) ?? "-")")
    }

    /// `STK,<end ms>,<duration ms>,<strokes>`: strokes counted over an interval (open water).
    public static func strokes(endMilliseconds: Int, durationMilliseconds: Int, count: Int) -> [UInt8] {
        line("STK,\(endMilliseconds),\(durationMilliseconds),\(count)")
    }

    /// `DST,<end ms>,<duration ms>,<metres>`: distance the watch measured over an interval (its own
    /// GPS or accelerometer: an open-water swim, a transition), metres with up to three decimals.
    public static func distance(endMilliseconds: Int, durationMilliseconds: Int, meters: Double) -> [UInt8] {
        let value = meters.isFinite ? Swift.max(0, Swift.min(meters, 1e9)) : 0
        let millimetres = Int((value * 1000).rounded())
        let fraction = String(millimetres % 1000)
        return line(
            "DST,\(endMilliseconds),\(durationMilliseconds),\(millimetres / 1000)."
                + String(repeating: "0", count: 3 - fraction.count) + fraction)
    }

    /// `BTN,<ms>,<button>`: a button press.
    public static func button(milliseconds: Int, _ button: Button) -> [UInt8] {
        line("BTN,\(milliseconds),\(button.rawValue)")
    }

    /// `GATT,<ms>,<characteristic uuid16 hex>,<payload hex>`: a tunnelled BLE characteristic value.
    public static func gatt(milliseconds: Int, characteristic: UInt16, payload: [UInt8]) -> [UInt8] {
        let hex = payload.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
        let uuid = String(characteristic, radix: 16, uppercase: true)
        return line("GATT,\(milliseconds),\(String(repeating: "0", count: Swift.max(0, 4 - uuid.count)) + uuid),\(hex)")
    }
}
