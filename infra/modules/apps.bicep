// The three roles as Container Apps from one image. The processor scales out with KEDA on
// the depth of its work queues (instances), and within an instance its listener scales
// dequeue threads with depth; it scales to one, not zero, since the trigger
// subscription needs a live receiver.
param token string
param location string
param tags object
param identityId string
param identityClientId string
param logAnalyticsWorkspaceId string
@secure()
param appInsightsConnectionString string
param storageAccountName string
param storageAccountUrl string
param servicebusNamespace string
@secure()
param warehouseUrl string
@secure()
param apiKey string
param partitions int

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: 'crbilling${token}'
  location: location
  tags: tags
  sku: { name: 'Basic' }
  properties: { adminUserEnabled: false }
}

var acrPull = '7f951dda-4ed3-4680-a7ca-43fe172d538d'

resource pull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: registry
  name: guid(registry.id, identityId, acrPull)
  properties: {
    principalId: reference(identityId, '2023-01-31').principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPull)
  }
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: 'cae-billing-${token}'
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: reference(logAnalyticsWorkspaceId, '2023-09-01').customerId
        sharedKey: listKeys(logAnalyticsWorkspaceId, '2023-09-01').primarySharedKey
      }
    }
  }
}

var secrets = [
  { name: 'warehouse-url', value: warehouseUrl }
  { name: 'api-keys', value: apiKey }
  { name: 'appinsights', value: appInsightsConnectionString }
]

var env = [
  { name: 'AZURE_CLIENT_ID', value: identityClientId }
  { name: 'BILLING_STORAGE_ACCOUNT_URL', value: storageAccountUrl }
  { name: 'BILLING_SERVICEBUS_NAMESPACE', value: servicebusNamespace }
  { name: 'BILLING_SERVICEBUS_MANAGE_ENTITIES', value: 'true' }
  { name: 'BILLING_PARTITIONS', value: string(partitions) }
  { name: 'BILLING_WAREHOUSE_URL', secretRef: 'warehouse-url' }
  { name: 'BILLING_API_KEYS', secretRef: 'api-keys' }
  { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', secretRef: 'appinsights' }
]

// KEDA adds an instance per 64 messages waiting on any work queue (every priority and
// partition: a batch's chunks are spread over its priority's partitions).
var workQueues = flatten(map([ 'high', 'normal', 'low' ], p => map(range(0, partitions), i => 'work-${p}-${i}')))
var queueDepthRules = map(workQueues, q => {
  name: 'depth-${q}'
  custom: {
    type: 'azure-queue'
    identity: identityId
    metadata: { accountName: storageAccountName, queueName: q, queueLength: '64' }
  }
})

var roles = [
  { name: 'initiator', command: [ 'billing', 'initiator', '--host', '0.0.0.0', '--port', '8000' ], ingress: true, min: 1, max: 3 }
  { name: 'processor', command: [ 'billing', 'processor' ], ingress: false, min: 1, max: 10 }
  { name: 'controller', command: [ 'billing', 'controller' ], ingress: false, min: 1, max: 2 }
]

resource apps 'Microsoft.App/containerApps@2024-03-01' = [
  for role in roles: {
    name: 'ca-${role.name}-${token}'
    location: location
    tags: union(tags, { 'azd-service-name': role.name })
    identity: { type: 'UserAssigned', userAssignedIdentities: { '${identityId}': {} } }
    properties: {
      managedEnvironmentId: environment.id
      configuration: {
        secrets: secrets
        registries: [ { server: registry.properties.loginServer, identity: identityId } ]
        ingress: role.ingress ? { external: true, targetPort: 8000, transport: 'auto' } : null
      }
      template: {
        containers: [
          {
            name: role.name
            image: 'mcr.microsoft.com/azuredocs/containerapps-helloworld:latest' // azd deploy replaces it
            command: role.command
            env: env
            resources: { cpu: json('1.0'), memory: '2Gi' }
          }
        ]
        scale: {
          minReplicas: role.min
          maxReplicas: role.max
          rules: role.name == 'processor' ? queueDepthRules : []
        }
      }
    }
    dependsOn: [ pull ]
  }
]

output registryLoginServer string = registry.properties.loginServer
output initiatorUrl string = 'https://${apps[0].properties.configuration.ingress.fqdn}'
