// Starts Kroxylicious from kroxylicious-runtime alone, standing in for its command line
// (kroxylicious-app), which this machine's Maven Central does not serve. Benchmark peer
// only (see pom.xml beside this file); bench/peers.py compiles and runs it:
//
//     java -cp 'LIB/*:CLASSES' KroxyliciousLauncher --config proxy.yaml

import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;
import java.nio.file.Files;
import java.nio.file.Path;

public final class KroxyliciousLauncher {
    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: KroxyliciousLauncher --config FILE.yaml");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config = parser.parseConfiguration(Files.readString(Path.of(args[1])));
        KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures());
        Runtime.getRuntime().addShutdownHook(new Thread(proxy::shutdown, "launcher-shutdown"));
        proxy.startup().block();
    }
}
