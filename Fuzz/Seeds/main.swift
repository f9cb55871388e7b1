import Foundation

// Writes the fuzz targets' seed corpora from valid frames made by the encoders:
//   seeds <directory>   → <directory>/{NMEA,ANT,WatchLink,GATT}/seed-N

func write(_ bytes: [UInt8], _ directory: URL, _ index: Int) throws {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data(bytes).write(to: directory.appendingPathComponent(String(format: "seed-%03d", index)))
}

let root = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "corpus")
let start = Date(timeIntervalSince1970: 1_750_000_000)

// NMEA: fixes on a loop, in pairs and alone, with a void fix.
var nmea: [[UInt8]] = []
for second in 0..<8 {
    let time = start.addingTimeInterval(Double(second) * 3601.5)
    let latitude = 47.9 + Double(second) * 0.01 - (second % 3 == 0 ? 96 : 0)
    let longitude = 11.3 - Double(second) * 0.02 + (second % 2 == 0 ? -30 : 0)
    nmea.append(NMEA.gga(time: time, latitude: latitude, longitude: longitude, altitude: Double(second) * 100 - 50))
    nmea.append(
        NMEA.rmc(
            time: time, latitude: latitude, longitude: longitude, speed: Double(second) * 1.5,
            course: Double(second) * 45)
            + NMEA.gga(time: time, latitude: latitude, longitude: longitude, altitude: 5))
}
nmea.append(NMEA.sentence("GPRMC,000000.00,V,,,,,,,010100,,,N") + NMEA.sentence("GPGGA,000000.00,,,,,0,00,,,M,,M,,"))
nmea.append(NMEA.sentence("GPGSV,1,1,00") + NMEA.sentence("PGRME,15.0,M,45.0,M,25.0,M"))

// ANT: channel ids, then each profile's pages, counters near their rollovers.
let channels =
    ANT.channelID(channel: 0, deviceNumber: 101, type: .heartRate)
    + ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence)
    + ANT.channelID(channel: 2, deviceNumber: 103, type: .bicyclePower)
    + ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod)
    + ANT.channelID(channel: 4, deviceNumber: 105, type: .bikeCadence)
    + ANT.channelID(channel: 5, deviceNumber: 106, type: .bikeSpeed)
var ant: [[UInt8]] = [channels]
for step in 0..<6 {
    var bytes = channels
    for message in 0..<4 {
        let n = step * 4 + message
        bytes += ANT.broadcast(
            channel: 0,
            ANT.heartRatePage(
                page4: n % 2 == 0, toggle: n % 4 >= 2, beatTime: 65000 + n * 700,
                previousBeatTime: 65000 + n * 700 - 650,
                beatCount: 250 + n, heartRate: 60 + n * 5))
        bytes += ANT.broadcast(
            channel: 1,
            ANT.speedCadencePage(
                crankTime: 64000 + n * 1024, crankRevolutions: 65534 + n, wheelTime: 64000 + n * 700,
                wheelRevolutions: 65530 + n * 3))
        bytes += ANT.broadcast(
            channel: 2, ANT.powerPage(eventCount: 254 + n, cadence: 90, accumulatedPower: 65400 + n * 250, power: 250))
        bytes += ANT.broadcast(channel: 2, [0x12, UInt8(n), UInt8(n), 85, UInt8(n * 7), 0xF0, UInt8(n * 3), 0xFF])
        bytes += ANT.broadcast(
            channel: 3,
            ANT.footPodPage(time: 250 + Double(n), distance: 250 + Double(n) * 3.3, speed: 3.3, strides: 250 + n))
        bytes += ANT.broadcast(channel: 3, [0x02, 0xFF, 0xFF, 88, 0x43, 0x10, 0, 0])
        bytes += ANT.broadcast(
            channel: 4, [0x80, 0xFF, 0xFF, 0xFF, UInt8(truncatingIfNeeded: n * 11), 0xFA, UInt8(n), 0xFF])
        bytes += ANT.broadcast(
            channel: 5, [0x00, 0xFF, 0xFF, 0xFF, UInt8(truncatingIfNeeded: n * 13), 0xFB, UInt8(n * 2), 0xFF])
    }
    ant.append(bytes)
}
ant.append(ANT.frame(.channelEvent, [0, 1, 7]) + ANT.frame(.startup, [0x20]) + [0xA4, 0x01, 0xAE, 0x02, 0x09])
ant.append(ANT.frame(.broadcastData, [7, 4, 0xFF, 1, 2, 3, 4, 5, 60, 0x80, 0x67, 0x12, 120, 1]))  // extended

// ANT host: a stick's answers to a whole configuration (startup, capabilities, a response per
// message), then broadcasts with extended data and the search-timeout events; a refusal; garbage.
let ok = { (channel: UInt8, id: UInt8) in ANT.frame(.channelEvent, [channel, id, 0]) }
var stick: [UInt8] = ANT.frame(.startup, [0x20]) + ANT.frame(.capabilities, [8, 8, 0, 0x3A, 0, 0, 0, 0])
stick += ok(0, 0x46) + ok(0, 0x6E)
for channel: UInt8 in 0..<7 {
    for id: UInt8 in [0x42, 0x51, 0x44, 0x43, 0x45, 0x4B] { stick += ok(channel, id) }
}
stick += ANT.frame(.broadcastData, [0, 4, 0xFF, 1, 2, 3, 4, 5, 60, 0x80, 0x67, 0x12, 120, 1])
stick += ANT.frame(.channelEvent, [1, 1, 0x01]) + ANT.frame(.channelEvent, [1, 1, 0x07]) + ok(1, 0x51) + ok(1, 0x4B)
stick += ANT.frame(.channelEvent, [0, 1, 0x08]) + ANT.frame(.channelID, [2, 0x67, 0x12, 11, 5])
var antHost: [[UInt8]] = [[0x00] + stick, [0x01] + stick, [0x02] + stick]
antHost.append([0x00] + ANT.frame(.startup, [0x20]) + ANT.frame(.capabilities, [2, 1]) + ok(0, 0x46) + [0xA4, 3, 0x40, 0, 0x6E, 0x28, 0xA1])
antHost.append([0x04] + ANT.frame(.startup, [0]) + ANT.frame(.capabilities, [4, 4]) + ANT.frame(.channelEvent, [0, 0x46, 0x15]))

// Watch-link: every message, and GATT values of each characteristic.
var watchLink: [[UInt8]] = [WatchLink.hello(device: "seed watch")]
for (index, kind) in WatchLink.LengthKind.allCases.enumerated() {
    watchLink.append(
        WatchLink.length(
            endMilliseconds: 30_000 * (index + 1), durationMilliseconds: 29_000, kind: kind,
            style: kind == .rest ? nil : WatchLink.Style.allCases[index], strokes: kind == .active ? 14 : nil))
}
watchLink.append(WatchLink.strokes(endMilliseconds: 20_000, durationMilliseconds: 10_000, count: 5))
watchLink.append(WatchLink.Button.allCases.flatMap { WatchLink.button(milliseconds: 1_479_000, $0) })
let gattValues: [(UInt16, [UInt8])] = [
    (0x2A37, [0x10, 150, 0x03, 0x04]), (0x2A37, [0x1F, 0x01, 0x01, 0xD2, 0x04, 0x20, 0x03, 0x00, 0x04]),
    (0x2A5B, [0x03, 0xFE, 0xFF, 0xFF, 0xFF, 0x00, 0xFC, 0xFF, 0xFF, 0x00, 0xF8]),
    (0x2A5B, [0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00]),
    (0x2A53, [0x07, 0x00, 0x04, 0xB4, 0x7D, 0x00, 0x40, 0xE2, 0x01, 0x00]),
    (0x2A63, [0x30, 0x00, 0xFA, 0x00, 0x64, 0, 0, 0, 0, 0x08, 0x0A, 0, 0, 0x04]),
    (
        0x2A63,
        [
            0xFF, 0x0F, 0x2C, 0x01, 100, 0x80, 0x0C, 7, 0, 0, 0, 0, 8, 3, 0, 0, 4, 0xF4, 1, 0x9C, 0xFF, 0x80, 2, 0xE0,
            0xFF, 0x23, 0x41, 0x0B, 15, 0, 195, 0, 0xDB, 0x03,
        ]
    ),
]
for (index, (uuid, payload)) in gattValues.enumerated() {
    watchLink.append(WatchLink.gatt(milliseconds: 1000 * index, characteristic: uuid, payload: payload))
}
watchLink.append(Array("$WL2,BTN,1,LAP*00\r\n$WL1,FOO*00\r\n".utf8))

// GATT: selector, length, payload records (the GATT target's input format).
let selectors: [UInt16: UInt8] = [0x2A37: 0, 0x2A5B: 1, 0x2A53: 2, 0x2A63: 3]
var gatt: [[UInt8]] = gattValues.map { [selectors[$0.0] ?? 4, UInt8($0.1.count)] + $0.1 }
gatt.append(gattValues.flatMap { [selectors[$0.0] ?? 4, UInt8($0.1.count)] + $0.1 })

for (name, seeds) in [("NMEA", nmea), ("ANT", ant), ("ANTHost", antHost), ("WatchLink", watchLink), ("GATT", gatt)] {
    for (index, seed) in seeds.enumerated() { try write(seed, root.appendingPathComponent(name), index) }
    print("\(name): \(seeds.count) seeds")
}
